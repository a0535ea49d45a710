// Semantic textual similarity evaluation (STS Benchmark format).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// One STS pair with its gold similarity (0-5).
struct StsPair {
  double score = 0;
  std::string sentence1, sentence2;
};

/// Reads an STS file in either common layout: the STS Benchmark's own (tab-separated, no
/// quoting, 7 or 9 fields per line; field 5 is the score, 6 and 7 the sentences, 1-based; blank
/// lines skipped) or the Hugging Face CSV export (a header naming `sentence1`, `sentence2` and
/// `score` — or `label` / `similarity_score` — in any order; RFC 4180 quoting). Scores may be on
/// any scale (Spearman uses ranks).
/// @throws headprune::Error naming the file and line for a malformed line or an empty file.
std::vector<StsPair> read_sts(const std::filesystem::path& file);

/// Spearman rank correlation of two equal-length samples (ties get average ranks), in [-1, 1].
/// @throws headprune::Error if the sizes differ or fewer than 2 values are given.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// Sentence embeddings of `texts` with the checkpoint's tokenizer, model and pooling, in
/// batches of similar length: [texts, hidden] on CPU. multipliers may be null.
torch::Tensor embed_texts(models::Checkpoint& checkpoint, const std::vector<std::string>& texts,
                          std::size_t batch_size, const torch::Device& device);

/// STS result: Spearman ×100 between cosine similarity and gold score (the metric of
/// sentence-transformers' EmbeddingSimilarityEvaluator and MTEB).
struct StsResult {
  std::size_t pairs = 0;
  double spearman_x100 = 0;
};
StsResult evaluate_sts(models::Checkpoint& checkpoint, const std::vector<StsPair>& pairs,
                       std::size_t batch_size, const torch::Device& device);

}  // namespace headprune::pruner
