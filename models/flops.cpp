#include "models/flops.h"

#include "models/errors.h"

namespace headprune::models {

double attention_flops_per_token(const ModelConfig& c, int64_t seq_len) {
  if (seq_len < 1) throw Error("sequence length for FLOPs must be >= 1");
  const double H = static_cast<double>(c.hidden_size), d = static_cast<double>(c.head_dim);
  const double kv_ratio =
      static_cast<double>(c.num_key_value_heads) / static_cast<double>(c.num_attention_heads);
  double total = 0;
  for (auto heads : c.heads_per_layer()) {
    const double h = static_cast<double>(heads), g = h * kv_ratio;
    total += 2 * H * d * (h + 2 * g) + 2 * h * d * H + 4.0 * static_cast<double>(seq_len) * h * d;
  }
  return total;
}

double forward_flops_per_token(const ModelConfig& c, int64_t seq_len) {
  const double ffn = 4.0 * static_cast<double>(c.hidden_size) *
                     static_cast<double>(c.intermediate_size) *
                     static_cast<double>(c.num_hidden_layers);
  return attention_flops_per_token(c, seq_len) + ffn;
}

}  // namespace headprune::models
