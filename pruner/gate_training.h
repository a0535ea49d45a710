// Training the head gates by self-distillation from the dense model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include <torch/types.h>

#include "gates/hard_concrete.h"
#include "gates/keep_mask.h"
#include "gates/sparsity.h"
#include "models/checkpoint.h"
#include "pruner/corpus.h"
#include "pruner/gate_state.h"

namespace headprune::pruner {

/// Every setting of a gate-training run (docs/cli.md lists the flags that set them).
struct GateTrainingOptions {
  int64_t steps = 300;
  std::size_t batch_size = 32;
  double learning_rate = 0.1;       ///< AdamW on log_alpha
  double lambda_learning_rate = 0.1;  ///< gradient-ascent (SGD) step on λ1, λ2 (docs/results.md)
  /// Target sparsity in [0, 1) (Lagrangian); unset = fixed penalty `l0_lambda`.
  std::optional<double> target_sparsity;
  gates::SparsityUnit unit = gates::SparsityUnit::kHeads;
  int64_t flops_seq_len = 128;       ///< sequence length FLOPs are counted at (unit flops)
  double l0_lambda = 0.0;            ///< Voita et al.'s λ (fixed-penalty mode)
  int64_t warmup_steps = -1;         ///< target ramp length; -1 = 40% of steps
  gates::HardConcreteOptions gate;
  gates::DeterministicRule rule = gates::DeterministicRule::kLouizos;
  gates::MaskConstraints constraints;
  double embedding_weight = 1.0;     ///< weight of the sentence-embedding loss term
  /// After the gate phase, fix the mask and fine-tune the weights by the same distillation for
  /// `finetune_steps` more steps (AdamW, `weights_learning_rate`, weight decay 0.01).
  bool train_weights = false;
  int64_t finetune_steps = 200;
  double weights_learning_rate = 1e-4;
  int64_t log_every = 10;            ///< progress line interval (steps)
  int64_t save_every = 50;           ///< snapshot interval for --resume (steps; 0 = never)
  uint64_t seed = 42;
  std::filesystem::path out_dir;     ///< gates folder (gates.json, train_log.jsonl, snapshot)
  bool resume = false;               ///< continue from out_dir's snapshot
  /// Stop (with a snapshot) after this many steps in this invocation; 0 = run to the end.
  /// `--resume` continues; the result equals an uninterrupted run.
  int64_t stop_after = 0;
  /// With frozen weights the teacher's outputs never change: keep up to this many MiB of them
  /// so later epochs skip the teacher's forward pass (0 = no cache).
  int64_t teacher_cache_mib = 2048;
  std::string model_path;            ///< recorded in the gate state
  torch::Device device = torch::kCPU;

  nlohmann::json to_json() const;
};

/// Trains gates on `checkpoint.model` (weights frozen unless train_weights) against the dense
/// model as teacher, writes progress to stderr, `train_log.jsonl` and periodic snapshots to
/// out_dir, and returns the final state (keep-mask included; also saved as out_dir/gates.json).
/// Objective: pruner/distillation.h plus the Lagrangian (target) or the fixed L0 penalty.
/// @throws headprune::Error for an unreachable target (before training), a corpus without
///         training sequences, NaN/inf in the loss (with the step), or a snapshot that does not
///         belong to this model/settings when resuming.
GateState train_gates(models::Checkpoint& checkpoint, const Corpus& corpus,
                      const GateTrainingOptions& options);

}  // namespace headprune::pruner
