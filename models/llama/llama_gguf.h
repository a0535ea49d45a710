// A llama.cpp GGUF file of architecture `llama` as an HF LLaMA config and HF-named tensors, so
// that one HF-convention code path serves safetensors folders, llama2.c files and GGUF files.
//
// Names (llama.cpp's gguf-py `tensor_mapping.py`, MODEL_ARCH.LLAMA): token_embd ->
// model.embed_tokens, output_norm -> model.norm, output -> lm_head (absent: tied embeddings),
// blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}
// -> model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
// mlp.{gate,up,down}_proj}. Config keys: `llama.block_count`, `llama.embedding_length`,
// `llama.feed_forward_length`, `llama.attention.head_count[_kv]`, `llama.context_length`,
// `llama.rope.freq_base`, `llama.attention.layer_norm_rms_epsilon` and friends (gguf.md, "LLM").
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/formats/gguf.h"
#include "models/formats/safetensors.h"

namespace headprune::models::llama {

/// A GGUF LLaMA model converted to HF conventions.
struct GgufLlama {
  GgufFile gguf;                ///< the header, for the tokenizer and chat template
  nlohmann::json config_json;   ///< an HF LlamaForCausalLM config.json
  ModelConfig config;           ///< config_json parsed
  TensorMap weights;            ///< HF key names; quantised tensors dequantised to float32
  std::map<std::string, std::string> source_types;  ///< HF name -> ggml type in the file ("Q4_1")
};

/// Reads `file`. q/k rows are permuted back from llama.cpp's interleaved rotary pairs to HF's
/// halves (the inverse of convert_hf_to_gguf.py's LlamaModel.permute; models/formats/llama2c.h,
/// permute_rotary_rows). Float32 metadata values are written to config.json as their shortest
/// decimal (9.99999975e-06 -> 1e-05).
/// @throws headprune::Error naming the file and the key or tensor: an architecture other than
///         `llama` (the supported list given), a missing required key, a key of the
///         architecture this reader does not model (rope scaling, experts, per-layer head
///         arrays, partial rotary dimensions), a tensor it does not map, a missing or
///         mis-shaped tensor, or any GGUF format violation.
GgufLlama read_llama_gguf(const std::filesystem::path& file);

/// The `llama.*` metadata keys read_llama_gguf models (for messages and tests).
const std::set<std::string>& modelled_gguf_keys();

}  // namespace headprune::models::llama
