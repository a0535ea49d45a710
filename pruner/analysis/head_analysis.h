// `headprune heads`: running a checkpoint over real sentences with its attention recorded, and
// what each head turned out to do (pruner/analysis/head_stats.h, head_roles.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/analysis/conllu.h"
#include "pruner/analysis/head_roles.h"
#include "pruner/analysis/head_stats.h"
#include "pruner/records/gate_record.h"

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

/// Token sequences already encoded (e.g. a corpus's held-out part), special tokens included; no syntax.
AnalysisInput sentences_from_ids(const models::Tokenizer& tokenizer, const std::vector<std::vector<int64_t>>& ids);

/// CoNLL-U sentences, each syntactic word tokenized on its own (Clark et al. 2019) between the
/// tokenizer's special tokens; a token belongs to its word. Sentences of more than
/// `max_length` tokens are left out and counted (`source` names the file in the message).
/// @throws headprune::Error when the tokenizer does not add the same special tokens around
///         every word (it cannot be split into words then).
AnalysisInput sentences_from_conllu(const models::Tokenizer& tokenizer, const std::vector<ConlluSentence>& sentences,
                                    std::size_t max_length, const std::string& source);

/// Reads the CoNLL-U file `conllu` and appends its sentences to `input`; warns (naming the
/// first by file and line) when some are longer than `max_length` tokens and left out.
/// @throws headprune::Error on an unreadable or malformed file (conllu.h).
void append_treebank(AnalysisInput& input, const models::Tokenizer& tokenizer, const std::filesystem::path& conllu,
                     std::size_t max_length);

/// What `headprune heads` measured.
struct HeadAnalysis {
  int64_t num_attention_heads = 0;                    ///< heads per layer of the model first pruned
  std::vector<std::vector<int64_t>> kept_heads;       ///< original head ids present, per layer
  std::vector<std::vector<double>> effective_rank;    ///< per layer and present head
  /// Per layer and present head: ablation_importance() (head_importance.h); empty when not measured.
  std::vector<std::vector<double>> importance;
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
  /// Mean importance of all heads, and of the kept and removed ones when gates are given;
  /// null when importance was not measured.
  nlohmann::json mean_importance() const;
  /// What `prune --analyze` stores in the export: headprune/head_roles.json (to_json),
  /// head_roles.txt (table) and head_roles.svg (roles_svg), by relative path.
  std::map<std::string, std::string> files() const;
};

/// How analyze_heads() runs.
struct AnalysisOptions {
  std::size_t batch_size = 32;            ///< sentences per forward pass
  std::size_t importance_sentences = 64;  ///< the first N sentences measure importance; 0: skip it
  torch::Device device = torch::kCPU;
};

/// Runs `checkpoint` over `input` (no gradient) with its attention recorded, accumulates every
/// head's statistics, names their roles, computes each head's effective rank and (unless
/// options.importance_sentences is 0) its ablation importance. `gates` (optional) must have
/// been trained on this model's heads.
/// @throws headprune::Error on empty input or gates for other heads.
HeadAnalysis analyze_heads(models::Checkpoint& checkpoint, const AnalysisInput& input, const AnalysisOptions& options,
                           std::optional<GateState> gates);

}  // namespace headprune::pruner
