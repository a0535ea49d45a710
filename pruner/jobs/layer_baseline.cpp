#include "pruner/jobs/layer_baseline.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/log.h"
#include "pruner/objectives/distillation.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/export.h"
#include "pruner/text/training_text.h"

namespace headprune::pruner {
namespace {

/// The dense model's distillation targets over the batches, computed once.
struct DenseTargets {
  std::vector<models::ModelInputs> inputs;
  std::vector<torch::Tensor> targets;
  std::vector<double> weights;  ///< each batch's share of the sequences
};

DenseTargets dense_targets(const models::Checkpoint& dense, const std::vector<std::vector<int64_t>>& sequences,
                           std::size_t batch_size, const torch::Device& device) {
  DenseTargets t;
  for (const auto& bucket : length_buckets(sequences, batch_size)) {
    t.inputs.push_back(make_inputs(sequences, bucket, dense.tokenizer->pad_id(), device));
    t.targets.push_back(distillation_target(dense.model->forward(t.inputs.back(), nullptr)));
    t.weights.push_back(static_cast<double>(bucket.size()) / static_cast<double>(sequences.size()));
  }
  return t;
}

/// The distillation loss of `model` with `layers` removed, against the dense targets.
double loss_without(const models::Checkpoint& model, const std::vector<int64_t>& layers, const DenseTargets& dense) {
  auto ckpt = models::copy_checkpoint(model);
  ckpt.model->drop_layers(layers);
  double loss = 0;
  for (std::size_t b = 0; b < dense.inputs.size(); ++b) {
    const auto out = ckpt.model->forward(dense.inputs[b], nullptr);
    loss += dense.weights[b] *
            distillation(out, dense.targets[b], dense.inputs[b].attention_mask, ckpt.pooling, 1.0).total.item<double>();
  }
  return loss;
}

}  // namespace

std::vector<LayerDrop> greedy_layer_order(const models::Checkpoint& dense,
                                          const std::vector<std::vector<int64_t>>& sequences,
                                          std::size_t batch_size, const torch::Device& device, int64_t steps) {
  if (sequences.empty()) throw Error("no sentences to rank layers on");
  torch::NoGradGuard no_grad;
  const int64_t layers = dense.model->config().num_hidden_layers;
  if (steps < 1 || steps >= layers)
    throw Error(fmt::format("cannot remove {} of {} layers (1..{} can be)", steps, layers, layers - 1));
  const auto targets = dense_targets(dense, sequences, batch_size, device);
  std::vector<LayerDrop> order;
  std::vector<int64_t> removed;
  for (int64_t step = 0; step < steps; ++step) {
    LayerDrop best{-1, std::numeric_limits<double>::infinity()};
    for (int64_t l = 0; l < layers; ++l) {
      if (std::find(removed.begin(), removed.end(), l) != removed.end() || !dense.model->config().droppable_layer(l))
        continue;
      auto candidate = removed;
      candidate.push_back(l);
      if (const double loss = loss_without(dense, candidate, targets); loss < best.loss) best = {l, loss};
    }
    removed.push_back(best.layer);
    order.push_back(best);
    log::info("layers: step {}/{}: removing layer {} (loss {:.5g}; removed so far {})", step + 1, steps, best.layer,
              best.loss, fmt::join(removed, " "));
  }
  return order;
}

int64_t layers_for_target(double target, int64_t layers) {
  const auto k = static_cast<int64_t>(std::lround(target * static_cast<double>(layers)));
  return std::clamp<int64_t>(k, 1, layers - 1);
}

nlohmann::json prune_layers(const PruneJobOptions& o, const std::vector<int64_t>& layers) {
  const auto t0 = std::chrono::steady_clock::now();
  check_export_target(o.model, o.out, o.force);
  log::info("\n[1/5] whole layers removed: {} (a baseline, no training)", fmt::join(layers, " "));
  auto pruned = models::load_checkpoint(o.model, o.training.device);
  const auto corpus = load_training_text(o.text, pruned, o.corpus);
  auto dense = models::copy_checkpoint(pruned);
  log::info("\n[2/5] removing layers");
  auto applied = drop_layers_in_memory(pruned, layers);
  log::info("{} of {} layers kept; {} of {} heads", pruned.model->config().num_hidden_layers,
            pruned.model->config().num_hidden_layers + static_cast<int64_t>(layers.size()), applied.heads_after,
            applied.heads_before);
  const nlohmann::json summary = {{"baseline", "layers"}, {"layers_removed", applied.layers_removed}};
  const nlohmann::json record = {{"command", "sweep --baselines layers"},
                                 {"source", o.model.string()},
                                 {"layers_removed", applied.layers_removed}};
  return measure_and_export(o, {pruned, dense, corpus, applied, o.training.batch_size}, summary, record, {}, t0);
}

}  // namespace headprune::pruner
