// `headprune bench`: dense vs pruned latency, measured side by side in one process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/attention_model.h"
#include "pruner/measure/inspect.h"
#include "pruner/thread_pools.h"

namespace headprune::pruner {

/// When a side-by-side measurement stops repeating.
struct RepeatRule {
  int warmup = 2;                 ///< untimed calls of each side first
  int min_reps = 5;               ///< timed pairs, at least
  int max_reps = 30;              ///< ... at most
  double stable_spread = 0.05;    ///< stop once (p75 − p25) / median < this for both sides
  double max_seconds = 60;        ///< stop repeating once the timed pairs took this long
  /// For progress lines: "2 warm-up calls each, then 5-30 timed pairs, at most ~60 s" ("no
  /// warm-up" when warmup is 0).
  std::string describe() const;
};

/// Grid and stopping rule.
struct BenchOptions {
  std::vector<int64_t> batches{1, 8, 32};
  std::vector<int64_t> seqs{32, 128, 512};
  int warmup = 2;                  ///< untimed runs per model per shape
  int min_reps = 5;                ///< timed runs per model per shape, at least
  int max_reps = 30;               ///< ... at most
  double stable_spread = 0.05;     ///< stop once (p75 − p25) / median < this for both models
  double max_seconds_per_shape = 60;  ///< stop repeating once a shape took this long
  uint64_t seed = 1234;            ///< token ids
  torch::Device device = torch::kCPU;
  /// The stopping fields as a RepeatRule.
  RepeatRule repeat_rule() const { return {warmup, min_reps, max_reps, stable_spread, max_seconds_per_shape}; }
};

/// One (batch, seq) cell. Latencies in milliseconds per forward pass.
struct BenchCell {
  int64_t batch = 0, seq = 0;
  int reps = 0;
  double dense_median_ms = 0, dense_p25_ms = 0, dense_p75_ms = 0;
  double pruned_median_ms = 0, pruned_p25_ms = 0, pruned_p75_ms = 0;
  double dense_tokens_per_s = 0, pruned_tokens_per_s = 0;
  double speedup = 0;        ///< dense median / pruned median
  double flops_ratio = 0;    ///< dense FLOPs / pruned FLOPs at this shape (the ideal speedup)
  double efficiency = 0;     ///< speedup / flops_ratio
  nlohmann::json to_json() const;
};

/// What a benchmark ran on.
struct BenchPlatform {
  ThreadPools threads;        ///< the pools that ran, as the libraries report them
  std::string torch_version;
  std::string device;
  /// This process's pools and LibTorch, on `device`.
  static BenchPlatform current(const torch::Device& device);
  /// The pools' keys (ThreadPools::to_json) with `torch_version` and `device`.
  nlohmann::json to_json() const;
  /// One line: "device cpu, <pools>, LibTorch <version>, BLAS <kernels>".
  std::string describe() const;
  /// A benchmark's JSON: to_json() with "results", each cell's to_json().
  template <typename Cell>
  nlohmann::json with_results(const std::vector<Cell>& cells) const {
    auto j = to_json();
    j["results"] = nlohmann::json::array();
    for (const auto& c : cells) j["results"].push_back(c.to_json());
    return j;
  }
};

/// The whole run, with what it ran on.
struct BenchReport {
  std::vector<BenchCell> results;
  BenchPlatform platform;
  /// What the two models hold (pruner/measure/inspect.h), at the grid's longest sequence.
  ModelSummary dense, pruned;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

/// Times `dense` and `pruned` forward passes (no gradient, random token ids, no padding) at
/// every grid shape, interleaving the two models (alternating which goes first) after warm-up,
/// repeating until the spread is small or a cap is hit. Progress on stderr.
/// @throws headprune::Error if a sequence length exceeds either model's
///         max_position_embeddings or the grid is empty.
BenchReport run_bench(models::AttentionModel& dense, models::AttentionModel& pruned,
                      const BenchOptions& options);

/// Times two measurements side by side: rule.warmup untimed calls of each, then `dense` and
/// `pruned` alternately (which goes first alternates rep by rep, so neither always runs on a
/// warmer cache) until rule.min_reps pairs are in and both samples are stable or
/// rule.max_seconds have passed, or rule.max_reps pairs. Each call returns the milliseconds it
/// measured. @returns the dense and the pruned sample, in the order taken.
std::pair<std::vector<double>, std::vector<double>> time_alternately(const std::function<double()>& dense,
                                                                     const std::function<double()>& pruned,
                                                                     const RepeatRule& rule);

/// The q-quantile (q in [0, 1]) of `v`, linear interpolation between order statistics (numpy's
/// default). @throws headprune::Error if `v` is empty.
double percentile(std::vector<double> v, double q);

}  // namespace headprune::pruner
