// sentence-transformers pooling: how a folder turns token states into one sentence embedding.
#pragma once

#include <filesystem>
#include <string>

#include <torch/types.h>

namespace headprune::models {

/// The Pooling (+ optional Normalize) modules of a sentence-transformers folder
/// (`modules.json`, `1_Pooling/config.json`; sentence-transformers `models/Pooling.py`).
struct SentencePooling {
  enum class Mode { kMean, kCls, kMax, kMeanSqrtLen };
  Mode mode = Mode::kMean;
  bool normalize = false;           ///< an L2 `Normalize` module follows pooling
  bool from_sentence_transformers = false;  ///< false: no modules.json, defaults used
  int64_t max_seq_length = 0;       ///< `sentence_bert_config.json` max_seq_length (0 = unset)

  /// Reads the folder's modules.json and pooling config; a folder without modules.json gets
  /// mean pooling without normalisation. @throws headprune::Error on a malformed file or a
  /// pooling mode that is not supported (weighted-mean, last-token).
  static SentencePooling from_directory(const std::filesystem::path& dir);

  /// hidden: [B, T, H] float; attention_mask: [B, T] (1 real, 0 pad) -> [B, H].
  /// Mean: sum(h·m)/max(sum(m), 1e-9); CLS: token 0; max: padded positions excluded;
  /// then L2 normalisation (eps 1e-12) if `normalize`.
  torch::Tensor embed(const torch::Tensor& hidden, const torch::Tensor& attention_mask) const;

  /// "mean", "cls", "max", "mean_sqrt_len" (+ "+normalize").
  std::string describe() const;
};

}  // namespace headprune::models
