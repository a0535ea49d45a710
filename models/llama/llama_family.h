// The LLaMA family (HF `model_type` "llama": LlamaForCausalLM, llama2.c checkpoints converted),
// with grouped-query attention and per-layer sets of query heads.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "models/model_family.h"

namespace headprune::models::llama {

/// The family's config rules, costs and export notes (llama_family.cpp).
const ModelFamily& family();

/// A LlamaModel for `config` (random weights). Defined in llama_model.cpp.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names);

}  // namespace headprune::models::llama
