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
#include <set>
#include <string>

#include "models/gguf_model.h"

namespace headprune::models::llama {

/// Reads `file`. q/k rows are permuted back from llama.cpp's interleaved rotary pairs to HF's
/// halves (the inverse of convert_hf_to_gguf.py's LlamaModel.permute; models/formats/llama2c.h,
/// permute_rotary_rows). Float32 metadata values are written to config.json as their shortest
/// decimal (9.99999975e-06 -> 1e-05).
/// @throws headprune::Error naming the file and the key or tensor: an architecture other than
///         `llama` (the supported list given), a missing required key, a key of the
///         architecture this reader does not model (rope scaling, experts, per-layer head
///         arrays, partial rotary dimensions), a tensor it does not map, a missing or
///         mis-shaped tensor, or any GGUF format violation.
GgufModel read_llama_gguf(const std::filesystem::path& file);

/// read_llama_gguf of a file whose header is read (GgufCodec::read of llama_gguf_codec.cpp).
GgufModel read_llama_gguf(GgufFile file);

/// The `llama.*` metadata keys read_llama_gguf models (for messages and tests).
const std::set<std::string>& modelled_gguf_keys();

}  // namespace headprune::models::llama
