#include "models/head_costs.h"

#include "models/errors.h"
#include "models/model_family.h"

namespace headprune::models {
int64_t HeadCosts::params_per_head(const ModelConfig& config) const {
  return params_per_query_head + (config.kv_group_size() == 1 ? params_per_kv_head : 0);
}

double HeadCosts::flops_per_head(const ModelConfig& config) const {
  return flops_per_query_head + (config.kv_group_size() == 1 ? flops_per_kv_head : 0);
}

HeadCosts head_costs(const ModelConfig& c, int64_t seq_len) {
  if (seq_len < 1) throw Error("sequence length for FLOPs must be >= 1");
  const bool bias = c.family().has_qkv_bias(c);
  const int64_t hd = c.hidden_size * c.head_dim;
  HeadCosts costs;
  costs.params_per_query_head = 2 * hd + (bias ? c.head_dim : 0);
  costs.params_per_kv_head = 2 * hd + (bias ? 2 * c.head_dim : 0);
  costs.flops_per_query_head = 4.0 * static_cast<double>(hd) +
                               4.0 * static_cast<double>(seq_len) * static_cast<double>(c.head_dim);
  costs.flops_per_kv_head = 4.0 * static_cast<double>(hd);
  return costs;
}

int64_t attention_parameters(const ModelConfig& c) {
  const auto costs = head_costs(c, 1);
  const auto kv = c.kept_kv_heads();
  int64_t total = 0;
  for (size_t l = 0; l < kv.size(); ++l)
    total += costs.params_per_query_head * static_cast<int64_t>(c.kept_heads[l].size()) +
             costs.params_per_kv_head * static_cast<int64_t>(kv[l].size()) +
             (c.family().has_output_bias(c) ? c.hidden_size : 0);
  return total;
}

int64_t params_per_ffn_neuron(const ModelConfig& c) {
  const auto& family = c.family();
  const int64_t matrices = family.ffn_matrices();
  return matrices * c.hidden_size + (family.has_ffn_bias(c) ? matrices - 1 : 0);
}

int64_t ffn_parameters(const ModelConfig& c) {
  int64_t neurons = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) neurons += c.ffn_width(l);
  const int64_t output_biases = c.family().has_ffn_bias(c) ? c.num_hidden_layers * c.hidden_size : 0;
  return neurons * params_per_ffn_neuron(c) + output_biases;
}

}  // namespace headprune::models
