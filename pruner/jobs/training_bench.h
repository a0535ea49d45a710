// `headprune bench-training`: what gating costs a training step, measured side by side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/thread_pools.h"

namespace headprune::pruner {

/// Shape and repetitions.
struct TrainingBenchOptions {
  int64_t batch = 32;
  int64_t seq = 128;
  int warmup = 1;        ///< untimed steps per kind
  int reps = 5;          ///< timed steps per kind, interleaved
  uint64_t seed = 1234;  ///< token ids
  torch::Device device = torch::kCPU;
  /// The KL's chunking as train-gates takes it (GateTrainingOptions::kl_chunk_tokens).
  int64_t kl_chunk_tokens = 0;
  /// Also run each kind once more, untimed, for its peak resident memory (Linux).
  bool memory = false;
  /// Activation checkpointing in the gate steps, as train-gates --checkpoint-layers takes it.
  std::string checkpoint_layers = "auto";
};

/// Resident memory (bytes, Linux /proc) of the three kinds of step, with `--memory`.
struct TrainingMemory {
  int64_t load_peak = 0;   ///< the process's peak before the bench (loading the checkpoint)
  int64_t resting = 0;     ///< resident between steps: weights, the teacher cache, LibTorch
  int64_t weights = 0;     ///< the model's parameters and buffers as held (dtype × count)
  int64_t optimiser = 0;   ///< AdamW's state of log_alpha (two moments)
  /// Per kind (dense, gate, gate with cached teacher): the peak during the step above `resting`,
  /// i.e. activations kept for backward, gradients and temporaries.
  int64_t dense_step = 0, gate_step = 0, gate_cached_step = 0;
  bool peak_reset = true;  ///< false where /proc/self/clear_refs was refused (peaks since start)
  nlohmann::json to_json() const;
};

/// Median milliseconds per step of each kind, and tokens per second (batch × seq / step time).
struct TrainingBenchReport {
  int64_t batch = 0, seq = 0;
  int reps = 0;
  ThreadPools threads;  ///< the pools that ran
  std::string device;
  /// Plain dense fine-tuning step: forward + backward to every weight (no optimizer step).
  double dense_ms = 0;
  /// A gate-training step as `train-gates` runs it before its teacher cache is warm: teacher
  /// forward (no gradient) + gated student forward + backward to log_alpha (weights frozen) +
  /// AdamW step on log_alpha.
  double gate_ms = 0;
  /// The same step with the teacher's outputs taken from the cache (later epochs).
  double gate_cached_ms = 0;
  int64_t kl_chunk_tokens = 0;            ///< tokens per KL chunk the gate steps used; 0 = whole batch
  std::optional<TrainingMemory> memory;  ///< with TrainingBenchOptions::memory
  double tokens_per_s(double ms) const;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

/// Runs the three kinds of step on `checkpoint.model` at one shape (random token ids, no
/// padding), interleaved, and reports their medians; with `memory`, then each once more for
/// its peak resident memory (TrainingMemory). The model's weights are left as they were
/// (no optimizer touches them) and frozen again afterwards.
/// @throws headprune::Error if seq exceeds max_position_embeddings or a size is < 1.
TrainingBenchReport run_training_bench(models::Checkpoint& checkpoint,
                                       const TrainingBenchOptions& options);

}  // namespace headprune::pruner
