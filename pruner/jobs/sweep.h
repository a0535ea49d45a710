// `headprune sweep`: several sparsity targets, each pruned, evaluated and benchmarked, and a
// plot of quality against measured speedup — the "baseline → sweep → plot → prune" workflow.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pruner/jobs/prune_job.h"
#include "pruner/jobs/quality_measure.h"

namespace headprune::pruner {

/// Settings: a prune job template (its out and target are set per target) and the targets.
struct SweepOptions {
  PruneJobOptions job;
  std::vector<double> targets;
  std::filesystem::path out;                  ///< sweep folder: target-XX/ subfolders + sweep.*
  /// What every model is scored by (STS-B or zero-shot tasks; default: the jobs' fidelity).
  /// The job template's own `quality` stays empty: the sweep measures each folder once.
  QualityMeasure quality;
  /// One gate training (at the middle target) read at every target (pruner/training/
  /// nested_masks.h) instead of one training per target. Gates only (no --train-weights).
  bool one_run = false;
  /// Also prune at every target with a retraining-free mask from per-head ablation importance
  /// (pruner/jobs/importance_baseline.h) into importance-XX/, on the same axes.
  bool importance_baseline = false;
  /// Also remove whole layers at every target (round(target x layers), chosen greedily by the
  /// distillation loss; pruner/jobs/layer_baseline.h) into layers-XX/, on the same axes.
  bool layer_baseline = false;
  /// With FFN gating (job.training kinds heads,ffn): also prune heads only to every target's FLOPs
  /// budget (the same recipe, into heads-XX/); a budget heads alone cannot reach is recorded as such.
  bool heads_baseline = false;
  /// With sublayer gating (kinds heads,ffn,layers): also heads and FFN blocks without the
  /// sublayer gates, to every target's FLOPs budget (into ffn-XX/).
  bool ffn_baseline = false;
};

/// What a sweep's targets count: fractions of heads removed, or with FFN gating (--prune
/// heads,ffn) fractions of the dense model's FLOPs per token removed (target t trains to
/// --target-flops (1 − t)), since heads and FFN blocks share a FLOPs budget.
bool targets_in_flops(const SweepOptions& options);

/// Runs one `prune` job per target (an independent gate-training run each, so every target
/// gets gates trained for it; with one_run, one training at the middle target whose gates are
/// read at the others, so the masks are nested), evaluates each model (STS or zero-shot tasks if given, else fidelity) and the dense
/// baseline, and writes `sweep.json`, `sweep.txt` and `sweep.svg` (quality vs measured speedup
/// at the last benchmark shape, with heads kept) into `out`. With importance_baseline, also one
/// model per target from the importance mask ("baselines": {"importance": {...}} in sweep.json,
/// a second series in the plot and the table); with layer_baseline, "layers" likewise.
/// With FFN gating the targets are FLOPs (targets_in_flops); heads_baseline adds "baselines":
/// {"heads": {...}} (heads only, same FLOPs budgets), ffn_baseline {"ffn": {...}} (heads and FFN
/// blocks without sublayer gates). Beside sublayer gates, which set the sweep's own kept minimum to
/// 0, those two run with prune's default (one head and one block per layer); else with the sweep's.
/// @throws headprune::Error if a target is out of [0,1) or unreachable (before any training),
///         or `out` exists and is not empty.
nlohmann::json run_sweep(const SweepOptions& options);

/// The table of sweep.txt: one row per target (and the dense baseline); a speedup that was
/// not measured (--no-bench) reads "not measured".
std::string sweep_table(const nlohmann::json& sweep);

/// The plot alone, from a sweep.json object (for tests and re-plotting).
std::string sweep_svg(const nlohmann::json& sweep);

}  // namespace headprune::pruner
