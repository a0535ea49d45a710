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

double forward_flops_per_token(const ModelConfig& c, int64_t seq_len) {
  const double H = static_cast<double>(c.hidden_size);
  // BERT: two FFN matrices; LLaMA: SwiGLU's three, plus the LM head over the vocabulary.
  const auto& family = c.family();
  double ffn = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    ffn += 2.0 * static_cast<double>(family.ffn_matrices()) * H * static_cast<double>(c.ffn_width(l));
  const double lm_head = family.has_lm_head() ? 2.0 * H * static_cast<double>(c.vocab_size) : 0.0;
  return attention_flops_per_token(c, seq_len) + ffn + lm_head;
}

}  // namespace headprune::models
