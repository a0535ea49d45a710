#include "pruner/records/gate_state.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/config.h"
#include "models/errors.h"
#include "pruner/atomic_write.h"

namespace headprune::pruner {

namespace {

/// Σ |x| over `t`'s elements in float64, 4M elements at a time: a whole float64 copy (and its
/// absolute value) of a 128K-token embedding would be two transient 2 GB tensors.
double absolute_sum(const torch::Tensor& t) {
  constexpr int64_t kBlock = int64_t{1} << 22;
  const auto flat = t.reshape({-1});
  double sum = 0;
  for (int64_t b = 0; b < flat.numel(); b += kBlock)
    sum += flat.slice(0, b, std::min(b + kBlock, flat.numel())).to(torch::kDouble).abs().sum().item<double>();
  return sum;
}

}  // namespace

ModelFingerprint fingerprint_of(const models::AttentionModel& model) {
  const auto& c = model.config();
  ModelFingerprint f;
  f.model_type = c.model_type;
  f.num_hidden_layers = c.num_hidden_layers;
  f.num_attention_heads = c.num_attention_heads;
  f.hidden_size = c.hidden_size;
  f.kept_heads = c.kept_heads;
  torch::NoGradGuard no_grad;
  for (const auto& p : model.parameters()) f.weights_checksum += absolute_sum(p);
  return f;
}

void load_trained_weights(const GateState& gates, const std::filesystem::path& dir,
                          models::Checkpoint& checkpoint) {
  if (!gates.trained_model) return;
  if (auto diff = gates.model.difference(fingerprint_of(*checkpoint.model)); !diff.empty())
    throw Error(fmt::format("{} holds weights fine-tuned from another model: {}. Give the model "
                            "the run started from ({})",
                            dir.string(), diff, gates.model_path));
  const auto file = dir / GateState::kWeightsFile;
  if (!std::filesystem::exists(file))
    throw Error(fmt::format("{} was trained with --train-weights but {} is missing; rerun "
                            "train-gates",
                            dir.string(), file.string()));
  const auto unused = models::load_weights(*checkpoint.model, models::load_safetensors(file),
                                           file.string());
  if (!unused.empty())
    throw Error(fmt::format("{} holds {} tensor(s) the model has no slot for (first: {})",
                            file.string(), unused.size(), unused.front()));
  if (auto diff = gates.trained_model->difference(fingerprint_of(*checkpoint.model));
      !diff.empty())
    throw Error(fmt::format("{} does not hold the weights the gates were trained with: {}",
                            file.string(), diff));
}

}  // namespace headprune::pruner
