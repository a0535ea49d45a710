// Phi-3's fused projections (HF Phi3Attention.qkv_proj, Phi3MLP.gate_up_proj): the files hold
// them as one matrix each; LlamaModel holds them split, so that heads are sliced, gated and
// exported as in every other LLaMA-style family.
#pragma once

#include <string>

#include "models/config.h"
#include "models/formats/safetensors.h"

namespace headprune::models::llama {

/// Splits, for each layer l, `model.layers.l.self_attn.qkv_proj.weight` [(h_l + 2·kv_l)·head_dim,
/// H] into q_proj [h_l·head_dim, H], k_proj and v_proj [kv_l·head_dim, H] (rows in that order:
/// Phi3Attention.forward slices query, key, value), and `model.layers.l.mlp.gate_up_proj.weight`
/// [2·I, H] into gate_proj and up_proj [I, H] (Phi3MLP: `gate, up = chunk(2)`). h_l and kv_l are
/// the heads `c` keeps in layer l. Other tensors pass unchanged.
/// @throws headprune::Error naming `source` and a missing fused tensor or one of another shape.
TensorMap split_fused_projections(TensorMap weights, const ModelConfig& c, const std::string& source);

/// The inverse: q/k/v_proj concatenated (rows) into qkv_proj, gate/up_proj into gate_up_proj.
TensorMap fuse_projections(TensorMap weights, const ModelConfig& c);

}  // namespace headprune::models::llama
