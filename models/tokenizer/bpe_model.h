// The BPE model of HF tokenizers (`models::bpe::BPE` with no dropout and no subword prefix /
// suffix): a vocabulary and a ranked list of merges, with an optional unknown token and byte
// fallback (SentencePiece-style vocabularies such as Gemma's, whose <0x00>..<0xFF> tokens spell
// characters the vocabulary lacks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace headprune::models {

/// What a BPE model does with a character that is not in its vocabulary (HF `BPE` options).
struct BpeUnknowns {
  bool byte_fallback = false;         ///< spell it as its UTF-8 bytes' <0xXX> tokens when all exist
  std::optional<int64_t> unk_id;      ///< else this id (none: the character is dropped)
  bool fuse_unk = false;              ///< consecutive unknown characters give one unk id
};

class BpeModel {
 public:
  BpeModel() = default;
  /// `vocab`: token -> id; `merges`: pairs in rank order (rank 0 first); `ignore_merges`: a
  /// pre-tokenized word that is itself in the vocabulary is emitted whole (Llama 3).
  /// @throws headprune::Error naming `source` if a merge's parts or result are not in the
  ///         vocabulary, or an id is negative or above 2^31.
  BpeModel(std::unordered_map<std::string, int64_t> vocab,
           std::vector<std::pair<std::string, std::string>> merges, bool ignore_merges,
           const std::string& source, BpeUnknowns unknowns = {});

  /// Appends the ids of one pre-tokenized word: its characters (one missing from the vocabulary
  /// handled as `unknowns` says, in HF `BPE::merge_word`'s order), then the adjacent pair of
  /// lowest merge rank merged first (leftmost among equal ranks), until no pair has a merge.
  void encode_word(const std::string& word, std::vector<int64_t>& out) const;

  std::optional<int64_t> token_to_id(const std::string& token) const;
  /// The token of `id`, or nullptr.
  const std::string* id_to_token(int64_t id) const;

  const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }
  const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }
  bool ignore_merges() const { return ignore_merges_; }
  const BpeUnknowns& unknowns() const { return unknowns_; }
  /// One more than the largest id.
  int64_t id_bound() const { return id_bound_; }

 private:
  struct Merge {
    int32_t rank;
    int64_t result;
  };
  /// One symbol of a word being merged (a doubly linked list over a vector; len 0 = merged away).
  struct Symbol {
    int64_t id;
    int64_t prev, next;
    std::size_t len;  ///< bytes of the word it covers
  };
  /// The word's characters as symbols, unknown ones as `unknowns_` says.
  void append_symbols(const std::string& word, std::vector<Symbol>& symbols) const;
  static uint64_t pair_key(int64_t a, int64_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(static_cast<uint32_t>(b));
  }
  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<int64_t, std::string> tokens_;  ///< id -> token (ids may have gaps)
  int64_t id_bound_ = 0;
  std::vector<std::pair<std::string, std::string>> merges_;
  std::unordered_map<uint64_t, Merge> merge_of_;
  bool ignore_merges_ = false;
  BpeUnknowns unknowns_;
  std::vector<int64_t> byte_ids_;  ///< byte_fallback: id of <0xXX> for each byte, -1 if absent
};

/// The merges HF recovers from a vocabulary that lists none (transformers
/// `tokenization_utils_base.generate_merges` with `vocab_scores`): every split of every token
/// into two vocabulary tokens (split between code points), ordered by the token's `score`
/// (highest first), then longest left part first; a token's splits are gathered in the order
/// of their parts' ids. `tokens` is in id order; a repeated token counts once, at its last id.
std::vector<std::pair<std::string, std::string>> merges_from_scores(const std::vector<std::string>& tokens,
                                                                    const std::vector<double>& scores);

/// A merge written as text, "a b" (tokenizer.json before tokenizers 0.20, GGUF
/// tokenizer.ggml.merges), as (a, b); nullopt unless exactly one space is in it.
std::optional<std::pair<std::string, std::string>> split_merge(const std::string& text);

}  // namespace headprune::models
