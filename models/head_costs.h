// What one attention head costs, in parameters and FLOPs: the one architecture-aware source
// that sparsity targets (pruner/training/sparsity_measure.h), `apply`'s size report and tests use.
#pragma once

#include <cstdint>

#include "models/config.h"

namespace headprune::models {

/// Costs of one head of a model described by a config. With width H, head size d and
/// sequence length s (FLOPs per token, a multiply-add counts 2; models/flops.h):
///   query part  Q rows and O columns:  params 2·H·d (+ d with biases),  FLOPs 4·H·d + 4·s·d
///               (the Q and O projections, QKᵀ and PV)
///   KV part     K and V rows:          params 2·H·d (+ 2·d with biases), FLOPs 4·H·d
/// BERT has biases and one KV head per query head; LLaMA has biases when `attention_bias` is
/// set and shares each KV head among kv_group_size() query heads (HF LlamaConfig). The output
/// projection's bias belongs to the layer, not to a head.
struct HeadCosts {
  int64_t params_per_query_head = 0;
  int64_t params_per_kv_head = 0;
  double flops_per_query_head = 0;  ///< per token at `seq_len`
  double flops_per_kv_head = 0;     ///< per token

  /// What removing one query head alone saves: the query part, plus the KV part when every
  /// query head has its own KV head (kv_group_size() == 1). Under grouped-query attention
  /// the KV part is saved only when the last query head of a group goes.
  int64_t params_per_head(const ModelConfig& config) const;
  double flops_per_head(const ModelConfig& config) const;
};

/// Parameters one FFN neuron holds: a row of each input projection and a column of the output
/// one (ffn_matrices · hidden_size), plus its input rows' biases when the FFN has biases (the
/// output projection's bias belongs to the layer). BERT: 2·H + 1; SwiGLU: 3·H (+ 2 with mlp_bias).
int64_t params_per_ffn_neuron(const ModelConfig& config);

/// @throws headprune::Error if seq_len < 1.
HeadCosts head_costs(const ModelConfig& config, int64_t seq_len);

/// All Q/K/V/O weights and biases of the heads present: per layer, query heads × query part +
/// KV heads still used × KV part + the output projection's bias (H, when it has one).
int64_t attention_parameters(const ModelConfig& config);

/// All FFN parameters: Σ_l ffn_width(l) · params_per_ffn_neuron, plus each output projection's
/// bias (hidden_size per layer, when the FFN has biases; it stays when a layer's FFN is emptied).
int64_t ffn_parameters(const ModelConfig& config);

}  // namespace headprune::models
