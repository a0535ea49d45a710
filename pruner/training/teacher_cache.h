// Caching the frozen teacher's outputs: with frozen weights the teacher never changes, so each
// length bucket's distillation target is computed once and reused in later epochs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "pruner/objectives/distillation.h"

namespace headprune::pruner {

/// Teacher targets by batch bucket (BatchStream::last_bucket()), up to a memory budget.
class TeacherCache {
 public:
  /// `mib` of tensors at most; 0 = no caching.
  explicit TeacherCache(int64_t mib) : budget_bytes_(mib * (int64_t{1} << 20)) {}

  /// The cached targets of `bucket` (teacher_targets), or `compute()`'s result (under no_grad),
  /// kept when it still fits the budget. Valid only while the teacher is frozen.
  TeacherTargets get(std::size_t bucket, const std::function<TeacherTargets()>& compute);

 private:
  int64_t budget_bytes_;
  int64_t bytes_ = 0;
  std::unordered_map<std::size_t, TeacherTargets> targets_;
};

}  // namespace headprune::pruner
