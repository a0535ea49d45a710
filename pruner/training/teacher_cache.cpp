#include "pruner/training/teacher_cache.h"

#include <torch/torch.h>

namespace headprune::pruner {

torch::Tensor TeacherCache::get(std::size_t bucket, const std::function<torch::Tensor()>& compute) {
  const bool enabled = budget_bytes_ > 0;
  if (auto hit = targets_.find(bucket); enabled && hit != targets_.end()) return hit->second;
  torch::Tensor target;
  {
    torch::NoGradGuard no_grad;
    target = compute();
  }
  const auto bytes = static_cast<int64_t>(target.numel() * target.element_size());
  if (enabled && bytes_ + bytes <= budget_bytes_) {
    targets_.emplace(bucket, target);
    bytes_ += bytes;
  }
  return target;
}

}  // namespace headprune::pruner
