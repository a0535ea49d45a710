#include "pruner/analysis/head_importance.h"

#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/log.h"
#include "pruner/objectives/distillation.h"
#include "pruner/text/corpus.h"

namespace headprune::pruner {
namespace {

/// Multipliers of all ones except head `head` of layer `layer`, which is 0.
models::HeadMultipliers without_head(const models::ModelConfig& config, size_t layer, int64_t head,
                                     const torch::Device& device) {
  models::HeadMultipliers m(static_cast<size_t>(config.num_hidden_layers));
  m[layer] = torch::ones({config.heads_per_layer()[layer]}, torch::TensorOptions().device(device));
  m[layer][head] = 0.0f;
  return m;
}

}  // namespace

std::vector<std::vector<double>> ablation_importance(const models::Checkpoint& ckpt,
                                                     const std::vector<std::vector<int64_t>>& sequences,
                                                     std::size_t batch_size, const torch::Device& device) {
  if (sequences.empty()) throw Error("no sentences to measure head importance on");
  auto& model = *ckpt.model;
  const auto& config = model.config();
  const auto heads = config.heads_per_layer();
  std::vector<std::vector<double>> importance;
  for (auto n : heads) importance.emplace_back(static_cast<size_t>(n), 0.0);
  torch::NoGradGuard no_grad;
  const auto buckets = length_buckets(sequences, batch_size);
  for (size_t b = 0; b < buckets.size(); ++b) {
    const auto in = make_inputs(sequences, buckets[b], ckpt.tokenizer->pad_id(), device);
    const auto target = distillation_target(model.forward(in, nullptr));
    const double weight = static_cast<double>(buckets[b].size()) / static_cast<double>(sequences.size());
    for (size_t l = 0; l < heads.size(); ++l)
      for (int64_t h = 0; h < heads[l]; ++h) {
        const auto multipliers = without_head(config, l, h, device);
        const auto loss = distillation(model.forward(in, &multipliers), target, in.attention_mask, ckpt.pooling, 1.0);
        importance[l][static_cast<size_t>(h)] += weight * loss.total.item<double>();
      }
    log::info("heads: importance {}/{} batches", b + 1, buckets.size());
  }
  return importance;
}

}  // namespace headprune::pruner
