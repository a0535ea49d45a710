// The Phi-3 family (HF `model_type` "phi3": Phi3ForCausalLM): a LLaMA-style decoder whose files
// hold the query/key/value projections as one `qkv_proj` and gate/up as one `gate_up_proj`,
// attending through an optional sliding window. The model is LlamaModel
// (models/llama/llama_model.h), which holds the projections split
// (models/llama/fused_projections.h); this folder holds only what differs from LLaMA.
#pragma once

#include "models/model_family.h"

namespace headprune::models::phi3 {

/// The family's config rules, costs and export notes (phi3_family.cpp). Its models are made by
/// llama::make_model.
const ModelFamily& family();

/// llama.cpp's `phi3` architecture, read and written (phi3_gguf.cpp).
const GgufCodec& gguf_codec();

}  // namespace headprune::models::phi3
