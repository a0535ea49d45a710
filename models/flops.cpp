#include "models/flops.h"

#include "models/errors.h"
#include "models/model_family.h"

namespace headprune::models {

double attention_flops_per_token(const ModelConfig& c, int64_t seq_len) {
  if (seq_len < 1) throw Error("sequence length for FLOPs must be >= 1");
  const double H = static_cast<double>(c.hidden_size), d = static_cast<double>(c.head_dim);
  const auto kv = c.kept_kv_heads();
  const auto heads_per_layer = c.heads_per_layer();
  double total = 0;
  for (size_t l = 0; l < heads_per_layer.size(); ++l) {
    const double h = static_cast<double>(heads_per_layer[l]), g = static_cast<double>(kv[l].size());
    total += 2 * H * d * (h + 2 * g) + 2 * h * d * H + 4.0 * static_cast<double>(seq_len) * h * d;
  }
  return total;
}

double ffn_flops_per_token(const ModelConfig& c) {
  // BERT: two FFN matrices; LLaMA: SwiGLU's three.
  const double H = static_cast<double>(c.hidden_size);
  double ffn = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    ffn += 2.0 * static_cast<double>(c.family().ffn_matrices()) * H * static_cast<double>(c.ffn_width(l));
  return ffn;
}

double forward_flops_per_token(const ModelConfig& c, int64_t seq_len) {
  // Decoders add the LM head over the vocabulary.
  const double lm_head =
      c.family().has_lm_head() ? 2.0 * static_cast<double>(c.hidden_size) * static_cast<double>(c.vocab_size) : 0.0;
  return attention_flops_per_token(c, seq_len) + ffn_flops_per_token(c) + lm_head;
}

}  // namespace headprune::models
