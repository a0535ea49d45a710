// Bucketed relative positions for a learned per-head attention bias (T5: Raffel et al. 2020,
// section 2.1; MPNet: Song et al. 2020, which reuses it). transformers' original:
// `MPNetEncoder.relative_position_bucket` / `T5Attention._relative_position_bucket`.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace headprune::models {

/// MPNet's buckets and the distance where the last one starts: transformers'
/// MPNetEncoder.compute_position_bias uses 32 and 128 whatever the config's
/// relative_attention_num_buckets says.
inline constexpr int64_t kMpnetBuckets = 32;
inline constexpr int64_t kMpnetMaxDistance = 128;

/// The bidirectional bucket of every (query i, key j) pair of a sequence of `seq_len` positions
/// 0..seq_len-1: half of `num_buckets` for keys after the query, half for keys at or before it;
/// within a half, distances below a quarter of `num_buckets` get a bucket each and longer ones
/// share logarithmically sized buckets up to `max_distance` (the last bucket beyond). Computed
/// in float32 like transformers', so the buckets are the same integers.
/// @returns int64 [seq_len, seq_len], values in [0, num_buckets).
torch::Tensor relative_position_bucket(int64_t seq_len, int64_t num_buckets, int64_t max_distance,
                                       const torch::Device& device);

}  // namespace headprune::models
