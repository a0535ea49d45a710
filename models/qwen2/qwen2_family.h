// The Qwen2 / Qwen2.5 family (HF `model_type` "qwen2": Qwen2ForCausalLM): a LLaMA-style decoder
// with biases on the query/key/value projections (none on o_proj). The model is LlamaModel
// (models/llama/llama_model.h); this folder holds only what differs from LLaMA: config keys,
// biases, and what an export says and needs.
#pragma once

#include "models/model_family.h"

namespace headprune::models::qwen2 {

/// The family's config rules, costs and export notes (qwen2_family.cpp). Its models are made by
/// llama::make_model.
const ModelFamily& family();

}  // namespace headprune::models::qwen2
