// What a gate-training run trains and how it resumes: the gates, the Lagrange multipliers,
// their optimisers and (with --train-weights) the weights with theirs, saved together as a
// snapshot (`train_state.pt`) so that `--resume` continues exactly where a run stopped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include <torch/optim.h>

#include "gates/hard_concrete.h"
#include "gates/sparsity.h"
#include "models/checkpoint.h"
#include "pruner/records/gate_state.h"

namespace headprune::pruner {

struct GateTrainingOptions;

/// The trainable state of one run. The teacher is the dense model, frozen: the student itself
/// (its gates off) while the weights are frozen, a separate copy only with --train-weights.
struct TrainingRun {
  /// Freezes the model's weights, takes the teacher copy if needed (`dense`: a copy of the
  /// checkpoint's model the caller made and keeps, models/loader.h copy_checkpoint; null: copied
  /// here), and makes the gates (HardConcreteGates over the model's heads), the Lagrangian and the
  /// optimisers: AdamW on log_alpha (no weight decay); plain gradient ascent (SGD) on λ1, λ2, whose
  /// step is proportional to the gap ŝ − t, so they settle as it closes; AdamW with weight decay
  /// 0.01 on the weights with --train-weights.
  TrainingRun(models::Checkpoint& checkpoint, const GateTrainingOptions& options,
              std::shared_ptr<models::AttentionModel> dense = nullptr);

  models::AttentionModel& model;
  std::shared_ptr<models::AttentionModel> teacher;
  std::shared_ptr<gates::HardConcreteGates> gates;
  std::shared_ptr<gates::Lagrangian> lagrangian;
  torch::optim::AdamW gate_optimizer;
  torch::optim::SGD lambda_optimizer;
  std::unique_ptr<torch::optim::AdamW> weights_optimizer;  ///< only with --train-weights
};

/// The snapshot file in a gates folder.
inline constexpr const char* kSnapshotFile = "train_state.pt";
/// The mask the weights phase trains on when GateTrainingOptions::fix_mask changed it (the
/// gates.json format), kept in the gates folder until the run finishes, for --resume.
inline constexpr const char* kFixedMaskFile = "fixed_mask.json";

/// Writes `<dir>/train_state.pt` (step, log_alpha, λ, optimiser states) and, with trained
/// weights, `<dir>/weights.safetensors`; each through a temporary file (NAME.tmp) and a rename
/// (pruner/atomic_write.h write_through).
/// `gate_steps`: where the gate phase ends (--steps plus any extension for convergence).
void save_snapshot(TrainingRun& run, const std::filesystem::path& dir, int64_t step, int64_t gate_steps);

/// Checks that `<options.out_dir>`'s snapshot belongs to this model (`fingerprint`) and these
/// settings (every recorded one equal), restores the run from it and returns its step and
/// where its gate phase ends (options.steps for snapshots written before extensions existed).
/// @throws headprune::Error if there is no snapshot (or the run already finished), the model
///         or a setting differs (named, with both values), or the trained weights are missing.
struct ResumePoint {
  int64_t step = 0;
  int64_t gate_steps = 0;
};
ResumePoint resume_from_snapshot(TrainingRun& run, const GateTrainingOptions& options,
                                 const ModelFingerprint& fingerprint);

/// Writes the model's weights to `<dir>/weights.safetensors`, through weights.safetensors.tmp
/// (pruner/atomic_write.h write_through).
void save_weights(const models::AttentionModel& model, const std::filesystem::path& dir);

}  // namespace headprune::pruner
