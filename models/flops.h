// Floating-point operation counts of a forward pass, from the configuration alone.
#pragma once

#include <cstdint>

#include "models/config.h"

namespace headprune::models {

/// FLOPs (a multiply-add counts 2) per token of one forward pass over a sequence of `seq_len`
/// tokens, summed over layers; embeddings and pooling are excluded. Per layer with h heads of
/// size d, KV heads g, width H, FFN width I (the layer's own):
///   projections  2·H·d·(h + 2g) + 2·h·d·H      (Q, K, V, O)
///   attention    4·seq_len·h·d                  (QKᵀ and PV)
///   feed-forward 4·H·I (BERT) or 6·H·I (LLaMA's SwiGLU: gate, up, down)
/// plus, for LLaMA, the LM head 2·H·V. g is the number of KV heads a layer still uses
/// (ModelConfig::kept_kv_heads; g = h for BERT).
/// @throws headprune::Error if seq_len < 1.
double forward_flops_per_token(const ModelConfig& config, int64_t seq_len);

/// Attention-only share of forward_flops_per_token (projections + attention).
double attention_flops_per_token(const ModelConfig& config, int64_t seq_len);

/// FFN-only share of forward_flops_per_token: Σ_l 2 · ffn_matrices · H · I_l (independent of seq_len).
double ffn_flops_per_token(const ModelConfig& config);

}  // namespace headprune::models
