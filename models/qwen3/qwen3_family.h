// The Qwen3 family (HF `model_type` "qwen3": Qwen3ForCausalLM): a LLaMA-style decoder whose
// query and key heads are RMS-normalised over head_dim before RoPE (q_norm / k_norm, one weight
// shared by a layer's heads), with an explicit head_dim (default 128, not hidden / heads). The
// model is LlamaModel (models/llama/llama_model.h, ModelConfig::qk_norm); this folder holds only
// what differs: config keys and what an export says.
#pragma once

#include "models/model_family.h"

namespace headprune::models::qwen3 {

/// The family's config rules, costs and export notes (qwen3_family.cpp). Its models are made by
/// llama::make_model.
const ModelFamily& family();

/// llama.cpp's `qwen3` architecture, read and written (qwen3_gguf.cpp).
const GgufCodec& gguf_codec();

}  // namespace headprune::models::qwen3
