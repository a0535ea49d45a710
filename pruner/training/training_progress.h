// Progress of a gate-training run: one line on stderr and one JSON record in train_log.jsonl
// every --log-every steps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "pruner/objectives/distillation.h"

namespace headprune::pruner {

/// The numbers of one logged step. Sparsities are fractions of the sparsity unit's total.
struct StepProgress {
  int64_t done = 0;           ///< steps completed
  int64_t total_steps = 0;    ///< gate steps + fine-tuning steps
  bool gate_phase = true;     ///< false while fine-tuning the weights
  double loss = 0;            ///< distillation + regulariser
  DistillationLoss parts;     ///< the distillation terms
  double regularizer = 0;
  double expected_l0 = 0;
  int64_t total_heads = 0;
  double target = 0;          ///< the (ramped) target sparsity this step
  double expected_sparsity = 0;
  double lambda_1 = 0, lambda_2 = 0;
  double tokens_per_second = 0;
  double seconds = 0;         ///< since this invocation started
  double eta_seconds = 0;
};

/// Writes progress to stderr (log::info) and appends records to `<dir>/train_log.jsonl`.
class TrainingProgress {
 public:
  /// Opens the log; `append` continues a resumed run's log instead of starting anew.
  TrainingProgress(const std::filesystem::path& dir, bool append);

  /// One stderr line and one JSON record (docs/formats.md, "train_log.jsonl").
  void log(const StepProgress& p);

 private:
  std::ofstream train_log_;
};

}  // namespace headprune::pruner
