#include "models/kv_cache.h"

#include <numeric>

namespace headprune::models {

std::vector<int64_t> kv_values_per_token_per_layer(const ModelConfig& config) {
  std::vector<int64_t> values;
  for (const auto& kv_heads : config.kept_kv_heads())
    values.push_back(2 * static_cast<int64_t>(kv_heads.size()) * config.head_dim);
  return values;
}

int64_t kv_values_per_token(const ModelConfig& config) {
  const auto per_layer = kv_values_per_token_per_layer(config);
  return std::accumulate(per_layer.begin(), per_layer.end(), int64_t{0});
}

int64_t held_bytes(const KvCache& cache) {
  int64_t bytes = 0;
  for (const auto* tensors : {&cache.keys, &cache.values})
    for (const auto& t : *tensors)
      if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

}  // namespace headprune::models
