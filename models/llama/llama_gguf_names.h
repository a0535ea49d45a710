// The one table of GGUF <-> HF tensor names of a LLaMA model, shared by the GGUF reader
// (llama_gguf.cpp) and writer (llama_gguf_export.cpp).
//
// Source: llama.cpp gguf-py `tensor_mapping.py` (MODEL_ARCH.LLAMA, also used by DECI):
// token_embd / output_norm / output and blk.N.<part> -> model.layers.N.<HF module>.
#pragma once

#include <array>
#include <utility>

namespace headprune::models::llama {

/// Whole-model tensors: {GGUF name, HF name}. `output.weight` is absent with tied embeddings.
inline constexpr std::array<std::pair<const char*, const char*>, 3> kGgufGlobalNames{{
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
}};

/// Per-layer tensors: {GGUF part, HF module} for `blk.N.<part>.weight` <->
/// `model.layers.N.<module>.weight`.
inline constexpr std::array<std::pair<const char*, const char*>, 9> kGgufLayerNames{{
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};

}  // namespace headprune::models::llama
