// The Unigram language-model tokenizer of SentencePiece as HF tokenizers runs it
// (`models::unigram::Unigram::encode_optimized`, Kudo 2018 "Subword Regularization", section 3):
// the segmentation of a word that maximises the sum of its pieces' log-probabilities (Viterbi).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace headprune::models {

class UnigramModel {
 public:
  /// `vocab`: (piece, score) by id, the score a log-probability (tokenizer.json's
  /// model.vocab); `unk_id` the id of the unknown piece, if any.
  /// @throws headprune::Error naming `source` on an empty vocabulary, an empty or repeated
  /// piece, a non-finite score or an unk_id outside the vocabulary.
  UnigramModel(std::vector<std::pair<std::string, double>> vocab, std::optional<int64_t> unk_id,
               const std::string& source);

  /// Appends the ids of `word` (valid UTF-8, already normalized and pre-tokenized): the best
  /// path over pieces by total score, ties to the shorter piece at each end position as HF's
  /// trie order gives; a character no single piece covers becomes an unknown node scored
  /// min_score - 10 (HF K_UNK_PENALTY), consecutive unknowns fused into one (fuse_unk), and a
  /// fused string not in the vocabulary maps to unk_id.
  /// @throws headprune::Error when an unknown character meets a vocabulary without unk_id.
  void encode(std::string_view word, std::vector<int64_t>& out) const;

  std::size_t size() const { return pieces_.size(); }
  const std::string& piece(int64_t id) const { return pieces_.at(static_cast<std::size_t>(id)).first; }
  double score(int64_t id) const { return pieces_.at(static_cast<std::size_t>(id)).second; }
  std::optional<int64_t> token_to_id(std::string_view piece) const;
  std::optional<int64_t> unk_id() const { return unk_id_; }

 private:
  std::vector<std::pair<std::string, double>> pieces_;
  std::unordered_map<std::string_view, int64_t> ids_;  ///< views into pieces_ (never resized)
  std::optional<int64_t> unk_id_;
  double min_score_ = 0.0;
  std::size_t max_piece_bytes_ = 0;
  std::string source_;
};

}  // namespace headprune::models
