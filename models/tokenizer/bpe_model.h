// The BPE model of byte-level BPE tokenizers (HF tokenizers `models::bpe::BPE` with no
// dropout, no unk token, no byte fallback, no subword prefix / suffix): a vocabulary of
// byte-level strings and a ranked list of merges.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace headprune::models {

class BpeModel {
 public:
  BpeModel() = default;
  /// `vocab`: token -> id; `merges`: pairs in rank order (rank 0 first); `ignore_merges`: a
  /// pre-tokenized word that is itself in the vocabulary is emitted whole (Llama 3).
  /// @throws headprune::Error naming `source` if a merge's parts or result are not in the
  ///         vocabulary, or an id is negative or above 2^31.
  BpeModel(std::unordered_map<std::string, int64_t> vocab,
           std::vector<std::pair<std::string, std::string>> merges, bool ignore_merges,
           const std::string& source);

  /// Appends the ids of one pre-tokenized, byte-level mapped word: its characters, then the
  /// adjacent pair of lowest merge rank merged first (leftmost among equal ranks), until no
  /// pair has a merge. Characters missing from the vocabulary are dropped (HF without unk).
  void encode_word(const std::string& word, std::vector<int64_t>& out) const;

  std::optional<int64_t> token_to_id(const std::string& token) const;
  /// The token of `id`, or nullptr.
  const std::string* id_to_token(int64_t id) const;

  const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }
  const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }
  bool ignore_merges() const { return ignore_merges_; }
  /// One more than the largest id.
  int64_t id_bound() const { return id_bound_; }

 private:
  struct Merge {
    int32_t rank;
    int64_t result;
  };
  static uint64_t pair_key(int64_t a, int64_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(static_cast<uint32_t>(b));
  }
  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<int64_t, std::string> tokens_;  ///< id -> token (ids may have gaps)
  int64_t id_bound_ = 0;
  std::vector<std::pair<std::string, std::string>> merges_;
  std::unordered_map<uint64_t, Merge> merge_of_;
  bool ignore_merges_ = false;
};

/// A merge written as text, "a b" (tokenizer.json before tokenizers 0.20, GGUF
/// tokenizer.ggml.merges), as (a, b); nullopt unless exactly one space is in it.
std::optional<std::pair<std::string, std::string>> split_merge(const std::string& text);

}  // namespace headprune::models
