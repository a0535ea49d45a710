#include "models/relative_position.h"

#include <cmath>

namespace headprune::models {

torch::Tensor relative_position_bucket(int64_t seq_len, int64_t num_buckets, int64_t max_distance,
                                       const torch::Device& device) {
  const auto positions = torch::arange(seq_len, torch::TensorOptions().dtype(torch::kLong).device(device));
  // n = query - key (transformers: n = -relative_position, relative_position = key - query).
  auto n = positions.unsqueeze(1) - positions.unsqueeze(0);
  const int64_t half = num_buckets / 2;
  auto bucket = (n < 0).to(torch::kLong) * half;
  n = n.abs();
  const int64_t max_exact = half / 2;
  // max_exact + log(n / max_exact) / log(max_distance / max_exact) * (half - max_exact), truncated
  // towards zero as .to(long) does; float32 throughout, as transformers computes it.
  auto large = (n.to(torch::kFloat) / static_cast<float>(max_exact)).log() /
               static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact))) *
               static_cast<float>(half - max_exact);
  auto val_if_large = (large.to(torch::kLong) + max_exact).clamp_max(half - 1);
  return bucket + torch::where(n < max_exact, n, val_if_large);
}

}  // namespace headprune::models
