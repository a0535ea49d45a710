// `headprune heads`: running a checkpoint over real sentences with its attention recorded, and
// what each head turned out to do (pruner/analysis/head_stats.h, head_roles.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/analysis/conllu.h"
#include "pruner/analysis/head_roles.h"
#include "pruner/analysis/head_stats.h"
#include "pruner/training/gate_record.h"

namespace headprune::pruner {

/// Sentences prepared for analysis, and those left out.
struct AnalysisInput {
  std::vector<AnalysisSentence> sentences;
  int64_t too_long = 0;         ///< CoNLL-U sentences over the length limit (left out)
  std::string first_too_long;   ///< "FILE:LINE" of the first of them
};

/// One sentence per line of `lines` (empty lines skipped), encoded as the model sees it
/// (special tokens added, truncated to `max_length` tokens); no syntax.
AnalysisInput sentences_from_text(const models::Tokenizer& tokenizer, const std::vector<std::string>& lines,
                                  std::size_t max_length);

/// CoNLL-U sentences, each syntactic word tokenized on its own (Clark et al. 2019) between the
/// tokenizer's special tokens; a token belongs to its word. Sentences of more than
/// `max_length` tokens are left out and counted (`source` names the file in the message).
/// @throws headprune::Error when the tokenizer does not add the same special tokens around
///         every word (it cannot be split into words then).
AnalysisInput sentences_from_conllu(const models::Tokenizer& tokenizer, const std::vector<ConlluSentence>& sentences,
                                    std::size_t max_length, const std::string& source);

/// What `headprune heads` measured.
struct HeadAnalysis {
  std::vector<std::vector<int64_t>> kept_heads;       ///< original head ids present, per layer
  std::vector<std::vector<double>> effective_rank;    ///< per layer and present head
  std::vector<std::vector<std::vector<std::string>>> roles;  ///< per layer and present head
  std::optional<HeadStatsAccumulator> stats;
  std::optional<GateState> gates;                      ///< when --gates was given
  int64_t sentences = 0, tokens = 0;
  double seconds = 0;

  /// Per head: layer, head (original id), roles, primary role, effective rank, the statistics,
  /// and the gate's log_alpha / keep when gates are given; plus the relations' baselines.
  nlohmann::json to_json() const;
  /// A fixed-width table, one row per head.
  std::string table() const;
  /// Heads per primary role, overall and split into kept / removed when gates are given.
  nlohmann::json role_counts() const;
};

/// Runs `checkpoint` over `input` in batches of `batch_size` sentences (no gradient) with its
/// attention recorded, accumulates every head's statistics, names their roles and computes
/// each head's effective rank. `gates` (optional) must have been trained on this model's heads.
/// @throws headprune::Error on empty input or gates for other heads.
HeadAnalysis analyze_heads(models::Checkpoint& checkpoint, const AnalysisInput& input, std::size_t batch_size,
                           const torch::Device& device, std::optional<GateState> gates);

}  // namespace headprune::pruner
