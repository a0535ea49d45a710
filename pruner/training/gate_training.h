// Training the head gates by self-distillation from the dense model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/distributed/process_group.h"
#include "pruner/records/gate_state.h"
#include "pruner/text/corpus.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {

/// With a budget, the options that train towards it; without, the options unchanged. A latency
/// budget (options.target_latency) prices masks with options.latency_table, which the caller
/// provides (pruner/jobs/latency_measurement.h provide_latency_table).
/// options.target_params (parameters of the whole model, N or X%): unit attention-params and
/// the target (P − N) / A, P being the model's parameters and A its attention parameters (the
/// only ones heads hold). options.target_flops (a share f of the dense model's forward FLOPs per
/// token at flops_seq_len): unit flops and the target 1 − f. The final mask then removes at
/// least that cost (gates::keep_mask_for_target's at_least), so the model stays within it.
/// @throws headprune::Error for a budget at or above the dense model, or one that removing
///         every head the constraints allow cannot reach.
GateTrainingOptions with_budget(const GateTrainingOptions& options, const models::AttentionModel& model);

/// Trains gates on `checkpoint.model` (weights frozen unless train_weights) against the dense
/// model as teacher, writes progress to stderr, `train_log.jsonl` and periodic snapshots to
/// out_dir, and returns the final state (keep-mask included; also saved as out_dir/gates.json).
/// Objective: pruner/objectives/distillation.h plus the Lagrangian (target) or the fixed L0 penalty;
/// a budget (--target-params, --target-flops) first goes through with_budget.
/// In a data-parallel `group` each rank trains on its share of every batch (same global batch,
/// same result as one process up to float32 summation order); rank 0 alone writes and measures
/// held-out fidelity (the other ranks return the same state without it).
/// @throws headprune::Error for an unreachable target (before training), a corpus without
///         training sequences, NaN/inf in the loss (with the step), a snapshot that does not
///         belong to this model/settings when resuming, or a lost peer (distributed);
///         pruner::Interrupted after a snapshot on SIGINT/SIGTERM (of any rank).
/// With train_weights the teacher is `dense` when given (a copy of the checkpoint's model the
/// caller keeps for later stages: models/loader.h copy_checkpoint), else a copy made here.
GateState train_gates(models::Checkpoint& checkpoint, const Corpus& corpus,
                      const GateTrainingOptions& options, const ProcessGroup& group = ProcessGroup(),
                      std::shared_ptr<models::AttentionModel> dense = nullptr);

}  // namespace headprune::pruner
