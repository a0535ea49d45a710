#include "models/checkpoint.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/linear.h"
#include "models/model_family.h"

namespace headprune::models {
namespace {
/// `t` when it is contiguous and alone in its storage, else a compact copy: a parameter that
/// takes it over never pins a larger buffer (a view into a whole file's bytes).
torch::Tensor own_tensor(const torch::Tensor& t) {
  const bool alone = t.is_contiguous() && t.storage().nbytes() == static_cast<std::size_t>(t.nbytes());
  return alone ? t : t.clone(at::MemoryFormat::Contiguous);
}

/// Refuses a floating-point tensor holding NaN or ±Inf, naming it and the first such element.
/// Looked at in blocks of 2^20 elements, so that no whole-tensor temporary is made.
void require_finite(const torch::Tensor& t, const std::string& source, const std::string& name) {
  if (!t.is_floating_point()) return;
  constexpr int64_t kBlock = int64_t{1} << 20;
  const auto flat = t.reshape({-1});
  for (int64_t start = 0; start < flat.numel(); start += kBlock) {
    const auto block = flat.slice(0, start, std::min(flat.numel(), start + kBlock));
    if (torch::isfinite(block).all().item<bool>()) continue;
    const auto bad = torch::logical_not(torch::isfinite(block)).nonzero()[0][0].item<int64_t>();
    throw Error(fmt::format("{}: weight '{}' holds a non-finite value ({} at element {}): the checkpoint "
                            "is damaged or was saved from a diverged training; headprune cannot prune it",
                            source, name, block[bad].item<double>(), start + bad));
  }
}

}  // namespace

std::vector<std::string> load_weights(torch::nn::Module& module, const TensorMap& weights,
                                      const std::string& source, const std::set<std::string>& keep_dtype) {
  std::map<std::string, const torch::Tensor*> by_name;
  for (const auto& [k, v] : weights) by_name[k] = &v;

  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  auto assign = [&](const std::string& name, torch::Tensor& slot, bool required) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (required)
        throw Error(fmt::format("{}: weight '{}' (shape [{}]) is missing", source, name,
                                fmt::join(slot.sizes(), ", ")));
      return;
    }
    const auto& t = *it->second;
    if (t.sizes() != slot.sizes())
      throw Error(fmt::format(
          "{}: weight '{}' has shape [{}] but the config implies [{}] (does config.json, "
          "including pruned_heads, describe these weights?)",
          source, name, fmt::join(t.sizes(), ", "), fmt::join(slot.sizes(), ", ")));
    require_finite(t, source, name);
    const bool narrow = keep_dtype.count(name) && t.is_floating_point() && t.element_size() < slot.element_size();
    if (narrow || t.dtype() == slot.dtype())
      slot.set_data(own_tensor(t));  // the file's tensor itself: the weights are never held twice
    else
      slot.copy_(t.to(slot.dtype()));
    used.insert(name);
  };
  for (auto& p : module.named_parameters(true)) assign(p.key(), p.value(), true);
  for (auto& b : module.named_buffers(true)) assign(b.key(), b.value(), false);

  std::vector<std::string> unused;
  for (const auto& [name, t] : by_name)
    if (!used.count(name)) unused.push_back(name);
  return unused;
}

TensorMap state_dict(const torch::nn::Module& module) {
  TensorMap out;
  for (const auto& p : module.named_parameters(true))
    out[p.key()] = p.value().detach().to(torch::kCPU).contiguous();
  for (const auto& b : module.named_buffers(true))
    out[b.key()] = b.value().detach().to(torch::kCPU).contiguous();
  return out;
}

TensorMap checkpoint_state_dict(const Checkpoint& checkpoint) {
  auto encoder = state_dict(*checkpoint.model);
  for (auto& [key, tensor] : encoder)
    if (auto d = checkpoint.source_dtypes.find(key); d != checkpoint.source_dtypes.end())
      tensor = tensor.to(d->second);
  encoder = checkpoint.model->weights_to_file(std::move(encoder));
  TensorMap out;
  if (checkpoint.classifier) {
    out = state_dict(*checkpoint.classifier);
    for (auto& [key, tensor] : encoder) out[checkpoint.classifier->layout.encoder_prefix + key] = std::move(tensor);
  } else {
    out = std::move(encoder);
  }
  for (const auto& [key, tensor] : checkpoint.passthrough)
    if (!out.emplace(key, tensor).second)
      throw Error(fmt::format("tensor '{}' is both a model weight and an unused tensor of the "
                              "source file; please report this",
                              key));
  return out;
}

namespace {

void cast_floating(torch::nn::Module& module, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters())
    if (p.is_floating_point()) p.set_data(p.to(dtype));
  for (auto& b : module.buffers())
    if (b.is_floating_point()) b.set_data(b.to(dtype));
}

}  // namespace

void widen_narrow_weights(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters())
    if (p.is_floating_point() && p.element_size() < 4) p.set_data(p.to(torch::kFloat));
}

void cast_checkpoint(Checkpoint& checkpoint, torch::ScalarType dtype) {
  cast_floating(*checkpoint.model, dtype);
  if (checkpoint.classifier) cast_floating(*checkpoint.classifier, dtype);
}

void round_to_source_dtypes(Checkpoint& checkpoint) {
  torch::NoGradGuard no_grad;
  for (auto& p : checkpoint.model->named_parameters(true)) {
    auto d = checkpoint.source_dtypes.find(p.key());
    if (d != checkpoint.source_dtypes.end() && d->second != p.value().scalar_type())
      p.value().copy_(p.value().to(d->second).to(p.value().scalar_type()));
  }
}

}  // namespace headprune::models
