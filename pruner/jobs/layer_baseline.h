// The layer-dropping baseline `sweep --baselines layers` sets beside the L0 gates (issue 17,
// item 5a): instead of heads, whole layers (attention and feed-forward) are removed, the ones
// the dense model misses least, chosen greedily by the same distillation loss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "pruner/jobs/prune_job.h"

namespace headprune::pruner {

/// One step of the greedy search.
struct LayerDrop {
  int64_t layer = 0;  ///< the layer removed at this step (index in the dense model)
  double loss = 0;    ///< distillation loss with it and every earlier step's layer removed
};

/// Greedy layer removal: starting from the dense model at `model`, each step removes the layer
/// whose removal (on top of the earlier steps') gives the lowest self-distillation loss
/// (pruner/objectives/distillation.h, embedding weight 1: the loss the gates train on) against
/// the dense model over `sequences` (token ids, batches of `batch_size`), for `steps` steps.
/// The greedy search of Sajjad et al. 2023 ("On the effect of dropping layers of pre-trained
/// transformer models") and ShortGPT's per-layer scoring, with our objective as the score.
/// Cost: (L + (L−1) + … + (L−steps+1)) loss evaluations, each one forward pass per batch of a
/// copy of `dense` (models/loader.h copy_checkpoint); the dense targets are kept in memory ([sequences, seq, hidden] or
/// [sequences, seq, vocab] floats).
/// Layers the config cannot remove (ModelConfig::droppable_layer: ModernBERT's layer 0) are not
/// candidates. @throws headprune::Error if `sequences` is empty or steps is not in [1, layers − 1].
std::vector<LayerDrop> greedy_layer_order(const models::Checkpoint& dense,
                                          const std::vector<std::vector<int64_t>>& sequences,
                                          std::size_t batch_size, const torch::Device& device, int64_t steps);

/// Layers removed for a target share of heads: round(target · layers), at least 1 and at most
/// layers − 1 (a layer holds 1/layers of the heads of an unpruned model).
int64_t layers_for_target(double target, int64_t layers);

/// Stages 2–5 of a prune job with whole layers removed instead of heads: drops `layers`
/// (indices of options.model's layers) from a fresh copy, measures fidelity (and held-out
/// accuracy with labels) on the run's held-out text, benchmarks and exports to options.out
/// (a plain HF checkpoint with fewer num_hidden_layers). The summary records
/// {"baseline": "layers", "layers_removed": [...]}; no refit (refused by the sweep).
/// @throws headprune::Error as the prune job's later stages do.
nlohmann::json prune_layers(const PruneJobOptions& options, const std::vector<int64_t>& layers);

}  // namespace headprune::pruner
