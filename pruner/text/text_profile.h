// What the calibration text looks like to the model, and when to warn about it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/tokenizer.h"

namespace headprune::pruner {

/// A few numbers that tell whether a text is enough, and sentence-like enough, to train the
/// gates on. The gates learn which heads the model's behaviour *on this text* needs; a short or
/// odd text gives a mask fitted to it (docs/results.md, "Which calibration text?").
struct TextProfile {
  std::size_t documents = 0;        ///< documents read (lines, or paragraphs)
  std::size_t train_sequences = 0;  ///< tokenized training sequences (after dropping short ones)
  std::size_t train_tokens = 0;     ///< their tokens, special tokens included
  double median_tokens = 0;         ///< median training sequence length, special tokens included
  double truncated_share = 0;       ///< training sequences at the length limit (cut, or exactly that long; 0..1)
  /// Special tokens inside the text (not the [CLS]/[SEP]/BOS the tokenizer adds at the ends) per
  /// text token: in practice the unknown token ([UNK], <unk>), i.e. characters the vocabulary lacks.
  double unknown_share = 0;
  double distinct_share = 1;        ///< distinct training sequences / training sequences
  /// Letters among the non-space characters of the held-out documents (a random 10% of the text,
  /// so an unbiased sample): low for code, numbers, tables, markup. NaN if there is none.
  double letter_share = 0;

  /// {"documents", "train_sequences", ..., "warnings": text_warnings()} for summary.json.
  nlohmann::json to_json() const;
  /// One line: "N documents, N training sequences (N tokens, median N), ...".
  std::string describe() const;
};

/// Profiles a tokenized text: `train` the training sequences as the tokenizer returned them
/// (at most `max_length` ids, special tokens included), `heldout_text` the held-out documents'
/// text, `documents` how many were read.
TextProfile profile_text(const std::vector<std::vector<int64_t>>& train,
                         const std::vector<std::string>& heldout_text, std::size_t documents,
                         const models::Tokenizer& tokenizer, std::size_t max_length);

/// Limits below which the text is reported as too short or unlike sentences. Set from the
/// calibration study (docs/results.md, "Which calibration text?"): every corpus that scored well
/// passes all of them.
struct TextLimits {
  std::size_t min_train_sequences = 500;
  double min_median_tokens = 6;
  double max_unknown_share = 0.01;
  double min_letter_share = 0.85;
  double min_distinct_share = 0.9;
};

/// One sentence per limit the profile misses, each saying what was measured and what to do;
/// empty when the text looks fine.
std::vector<std::string> text_warnings(const TextProfile& profile, const TextLimits& limits = {});

}  // namespace headprune::pruner
