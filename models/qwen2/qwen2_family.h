// The Qwen2 / Qwen2.5 family (HF `model_type` "qwen2": Qwen2ForCausalLM): a LLaMA-style decoder
// with biases on the query/key/value projections (none on o_proj). The model is LlamaModel
// (models/llama/llama_model.h); this folder holds only what differs from LLaMA: config keys,
// biases, and what an export says and needs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/model_family.h"

namespace headprune::models::qwen2 {

/// The family's config rules, costs and export notes (qwen2_family.cpp). Its models are made by
/// llama::make_model.
const ModelFamily& family();

/// Reads Qwen2Config's sliding-window keys (Qwen3's are the same): `use_sliding_window` must be
/// false (sliding-window attention is not implemented); `sliding_window` / `max_window_layers`
/// are then inert (HF drops them) and only type-checked; `layer_types`, if given, must list
/// "full_attention" for each of c.num_hidden_layers layers.
/// @throws headprune::Error naming `source` and the key.
void parse_sliding_window_keys(const nlohmann::json& j, const std::string& source, const ModelConfig& c);

/// llama.cpp's `qwen2` architecture, read and written (qwen2_gguf.cpp).
const GgufCodec& gguf_codec();

}  // namespace headprune::models::qwen2
