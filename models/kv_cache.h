// The keys and values of the positions a decoder has already seen, so that generation runs
// each new token alone instead of the whole sequence again (the "past_key_values" of HF).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace headprune::models {

/// Per layer the rotated keys and the values of every position so far, one entry per KV head
/// present in the layer (before GQA expansion): keys[l], values[l] are [batch, kv_heads, past,
/// head_dim], undefined before the first step. `length` is `past`, the next token's position.
struct KvCache {
  std::vector<torch::Tensor> keys, values;
  int64_t length = 0;
};

}  // namespace headprune::models
