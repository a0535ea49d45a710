#include "pruner/training/teacher_cache.h"

#include <torch/torch.h>

namespace headprune::pruner {

TeacherTargets TeacherCache::get(std::size_t bucket, const std::function<TeacherTargets()>& compute) {
  const bool enabled = budget_bytes_ > 0;
  if (auto hit = targets_.find(bucket); enabled && hit != targets_.end()) return hit->second;
  TeacherTargets target;
  {
    torch::NoGradGuard no_grad;
    target = compute();
  }
  const int64_t bytes = target.bytes();
  if (enabled && bytes_ + bytes <= budget_bytes_) {
    targets_.emplace(bucket, target);
    bytes_ += bytes;
  }
  return target;
}

}  // namespace headprune::pruner
