#include "pruner/jobs/importance_baseline.h"

#include <torch/torch.h>

#include "gates/keep_mask.h"
#include "pruner/records/gate_state.h"
#include "pruner/training/sparsity_measure.h"

namespace headprune::pruner {

GateState importance_gates(const models::Checkpoint& ckpt, const std::vector<std::vector<double>>& importance,
                           double target, const GateTrainingOptions& o) {
  const auto& config = ckpt.model->config();
  std::vector<double> score;
  for (const auto& layer : importance) score.insert(score.end(), layer.begin(), layer.end());
  const auto keep = gates::keep_mask_for_target(torch::tensor(score, torch::kDouble), config.heads_per_layer(),
                                                sparsity_measure(config, o), target,
                                                constraints_for(config, o.constraints));
  GateState state;
  state.model = fingerprint_of(*ckpt.model);
  state.model_path = o.model_path;
  state.settings = o.to_json();
  state.complete = true;
  std::size_t i = 0;
  for (std::size_t l = 0; l < importance.size(); ++l) {
    LayerGates layer;
    layer.heads = config.kept_heads[l];
    for (double value : importance[l]) {
      layer.log_alpha.push_back(value);
      layer.gate.push_back(keep[i] ? 1.0 : 0.0);
      layer.keep.push_back(keep[i++]);
    }
    state.layers.push_back(std::move(layer));
  }
  state.summary = {{"baseline", "importance"}, {"target", target}};
  return state;
}

}  // namespace headprune::pruner
