#include "pruner/training/nested_masks.h"

#include <torch/torch.h>

#include "pruner/training/sparsity_measure.h"

namespace headprune::pruner {

GateState gates_at_target(const GateState& trained, double target, const models::ModelConfig& config,
                          const GateTrainingOptions& o) {
  std::vector<double> log_alpha;
  for (const auto& layer : trained.layers) log_alpha.insert(log_alpha.end(), layer.log_alpha.begin(), layer.log_alpha.end());
  const auto keep = gates::keep_mask_for_target(torch::tensor(log_alpha, torch::kDouble), config.heads_per_layer(),
                                                sparsity_measure(config, o), target,
                                                constraints_for(config, o.constraints));
  auto state = trained;
  std::size_t i = 0;
  for (auto& layer : state.layers)
    for (std::size_t h = 0; h < layer.heads.size(); ++h, ++i) {
      layer.keep[h] = keep[i];
      if (keep[i] && layer.gate[h] <= 0) layer.gate[h] = 1.0;
    }
  state.summary["one_run"] = {{"trained_at", o.target_sparsity ? nlohmann::json(*o.target_sparsity) : nlohmann::json()},
                              {"target", target}};
  return state;
}

}  // namespace headprune::pruner
