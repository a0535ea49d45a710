// The Gemma 3 text family (HF `model_type` "gemma3_text": Gemma3ForCausalLM): a LLaMA-style
// decoder with GeGLU (tanh GELU), (1 + w) RMS norms — four per layer (sandwich) and on each
// query/key head —, embeddings scaled by sqrt(hidden_size), scores scaled by
// query_pre_attn_scalar, and sliding-window layers with their own RoPE base between global ones.
// The model is LlamaModel (models/llama/llama_model.h, which holds these as ModelConfig options);
// this folder holds only what differs: config keys and what an export says and needs.
#pragma once

#include "models/model_family.h"

namespace headprune::models::gemma3 {

/// The family's config rules, costs and export notes (gemma3_family.cpp). Its models are made
/// by llama::make_model.
const ModelFamily& family();

/// llama.cpp's `gemma3` architecture: read (norms less 1, no Q/K permutation); writing refused.
/// Defined in gemma3_gguf.cpp.
const GgufCodec& gguf_codec();

}  // namespace headprune::models::gemma3
