// Naming what a head does from its statistics (pruner/analysis/head_stats.h), and the
// low-rank structure of its score matrix.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "pruner/analysis/head_stats.h"

namespace headprune::pruner {

/// Thresholds of the roles (docs/analysis.md says where each comes from).
struct RoleThresholds {
  double positional = 0.9;       ///< Voita et al. 2019: one offset is the argmax for ≥ 90% of queries
  double rare_token = 0.5;       ///< most-attended token is the sentence's rarest in ≥ half the sentences
  double mass = 0.5;             ///< sink / delimiter / punctuation: ≥ half the attention mass
  /// Voita et al. 2019: accuracy at least this far above the relation's best fixed offset; here
  /// the lower end of the accuracy's 95% Wilson interval must be (rare relations are noisy)
  double syntactic_margin = 0.1;
  int64_t syntactic_minimum = 100;  ///< dependencies of the relation seen, at least
};

/// One head's roles, most specific first ("positional:-1", "syntactic:det>gov",
/// "previous-punctuation", "rare-token", "delimiter", "sink", "punctuation"); empty when none.
std::vector<std::string> head_roles(const HeadStats& stats, const HeadStatsAccumulator& all,
                                    const RoleThresholds& thresholds = {});

/// The first role's family ("positional", "syntactic", ...), or "other" for a head without one.
std::string primary_role(const std::vector<std::string>& roles);

/// Effective rank (Roy & Vetterli 2007: exp of the entropy of the normalised singular values)
/// of the head's bilinear score form W_Q,hᵀ·W_K,h (hidden × hidden, rank ≤ head_dim).
/// query, key: [head_dim, hidden]. Computed in float64 from the R factors of their QR
/// decompositions (the product's non-zero singular values are those of R_Q·R_Kᵀ).
double effective_rank(const torch::Tensor& query, const torch::Tensor& key);

/// The statistics behind the roles as JSON: offset shares, masses, rare share, confidence,
/// entropy, and per relation the accuracies next to their baselines.
nlohmann::json head_stats_json(const HeadStats& stats, const HeadStatsAccumulator& all);

}  // namespace headprune::pruner
