#include "pruner/training/teacher_cache.h"

#include <torch/torch.h>

namespace headprune::pruner {

std::vector<torch::Tensor> TeacherCache::get(std::size_t bucket,
                                             const std::function<std::vector<torch::Tensor>()>& compute) {
  const bool enabled = budget_bytes_ > 0;
  if (auto hit = targets_.find(bucket); enabled && hit != targets_.end()) return hit->second;
  std::vector<torch::Tensor> target;
  {
    torch::NoGradGuard no_grad;
    target = compute();
  }
  int64_t bytes = 0;
  for (const auto& t : target) bytes += static_cast<int64_t>(t.numel() * t.element_size());
  if (enabled && bytes_ + bytes <= budget_bytes_) {
    targets_.emplace(bucket, target);
    bytes_ += bytes;
  }
  return target;
}

}  // namespace headprune::pruner
