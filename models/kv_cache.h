// The keys and values of the positions a decoder has already seen, so that generation runs
// each new token alone instead of the whole sequence again (the "past_key_values" of HF), and
// what such a cache costs per position.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "models/config.h"

namespace headprune::models {

/// Per layer the rotated keys and the values of every position so far, one entry per KV head
/// present in the layer (before GQA expansion): keys[l], values[l] are [batch, kv_heads, past,
/// head_dim], undefined before the first step. `length` is `past`, the next token's position.
struct KvCache {
  std::vector<torch::Tensor> keys, values;
  int64_t length = 0;
};

/// Per layer, the numbers one cached position adds to that layer's cache for one sequence:
/// 2 (key and value) × the KV heads present (ModelConfig::kept_kv_heads) × head_dim. Times the
/// element size (4 for F32, 2 for F16/BF16) it is bytes. Sliding windows are not applied:
/// headprune's KvCache keeps every position (a layer's window masks it); a runtime that keeps
/// only the window in a sliding layer (llama.cpp's SWA cache) holds min(position, window)
/// positions there.
std::vector<int64_t> kv_values_per_token_per_layer(const ModelConfig& config);

/// The sum over layers of kv_values_per_token_per_layer.
int64_t kv_values_per_token(const ModelConfig& config);

/// Bytes the tensors of `cache` hold now (keys and values of every layer; 0 when empty).
int64_t held_bytes(const KvCache& cache);

}  // namespace headprune::models
