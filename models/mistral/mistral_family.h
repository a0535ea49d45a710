// The Mistral family (HF `model_type` "mistral": MistralForCausalLM): a LLaMA-style decoder whose
// layers may attend through a sliding window. The model is LlamaModel
// (models/llama/llama_model.h, ModelConfig::sliding_window); this folder holds only what differs
// from LLaMA: config keys, the window, and what an export says and needs.
#pragma once

#include "models/model_family.h"

namespace headprune::models::mistral {

/// The family's config rules, costs and export notes (mistral_family.cpp). Its models are made
/// by llama::make_model.
const ModelFamily& family();

}  // namespace headprune::models::mistral
