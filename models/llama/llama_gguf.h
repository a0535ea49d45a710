// A llama.cpp GGUF file of a LLaMA-style architecture (`llama`; Gemma 3's layout lives in
// models/gemma3/) as an HF config and HF-named tensors, so that one HF-convention code path serves
// safetensors folders, llama2.c files and GGUF files.
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
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/formats/gguf_writer.h"
#include "models/gguf_model.h"

namespace headprune::models::llama {

/// How one llama.cpp architecture of a LLaMA-style decoder maps to HF conventions; the reader
/// (read_decoder_gguf) is shared, each family gives its layout (LLaMA's: read_llama_gguf).
struct GgufDecoderLayout {
  std::string architecture;  ///< `general.architecture` and the metadata prefix ("llama", "gemma3")
  std::string family;        ///< the family in messages ("LLaMA")
  /// Per-layer tensors: {GGUF part, HF module} for blk.N.<part>.weight <-> model.layers.N.<module>.weight.
  std::vector<std::pair<std::string, std::string>> layer_names;
  /// `<architecture>.*` metadata keys the layout reads (other keys of the architecture are refused).
  std::set<std::string> modelled_keys;
  /// q/k rows interleaved by llama.cpp's converter (LLaMA's permute): permuted back to HF's halves.
  bool permute_qk = true;
  /// Norm weights stored as 1 + w (llama.cpp's converter for Gemma adds 1): 1 is subtracted.
  bool norms_hold_one_plus_weight = false;
  /// The HF config.json of the file (`tied`: the file has no output.weight).
  nlohmann::json (*config_json)(const GgufFile& file, bool tied) = nullptr;
  /// Writing: layers with different head counts go to llama.cpp's `deci` (LLaMA) or are refused.
  bool uneven_as_deci = false;
  /// Writing: the architecture's keys beyond the shared ones (Gemma 3's sliding_window), or null.
  void (*extra_metadata)(const ModelConfig& c, GgufWriter& w) = nullptr;
};

/// LLaMA's layout (architecture `llama`).
const GgufDecoderLayout& llama_layout();

/// Reads `file` (header read, architecture layout.architecture) into HF conventions: names by
/// the layout's tables (token_embd, output_norm, output as LLaMA's), q/k rows permuted back where
/// the layout says so (the inverse of convert_hf_to_gguf.py's LlamaModel.permute;
/// models/formats/llama2c.h, permute_rotary_rows), norm weights less 1 where the file holds
/// 1 + w. Float32 metadata values are written to config.json as their shortest decimal
/// (9.99999975e-06 -> 1e-05).
/// @throws headprune::Error naming the file and the key or tensor: a missing required key, a key
///         of the architecture the layout does not model (rope scaling, experts, per-layer head
///         arrays, partial rotary dimensions), a tensor it does not map, a missing or
///         mis-shaped tensor, or any GGUF format violation.
GgufModel read_decoder_gguf(GgufFile file, const GgufDecoderLayout& layout);

/// read_decoder_gguf with LLaMA's layout (architecture `llama`).
GgufModel read_llama_gguf(const std::filesystem::path& file);
GgufModel read_llama_gguf(GgufFile file);

/// The `llama.*` metadata keys read_llama_gguf models (for messages and tests).
const std::set<std::string>& modelled_gguf_keys();

/// Metadata helpers for a layout's config_json. @throws headprune::Error naming the file and key
/// when it is missing (gguf_integer) or of another type.
int64_t gguf_integer(const GgufFile& f, const std::string& key);
int64_t gguf_integer_or(const GgufFile& f, const std::string& key, int64_t fallback);
/// A float as its shortest decimal (float32 1e-5 is stored as 9.99999975e-06).
double gguf_real_or(const GgufFile& f, const std::string& key, double fallback);
/// The head size (`<arch>.attention.key_length`, else hidden / heads), checked against
/// value_length and rope.dimension_count (partial rotary embeddings are refused).
int64_t gguf_head_dim(const GgufFile& f, const std::string& arch);
/// The vocabulary size: `<arch>.vocab_size`, else the tokenizer's token count.
int64_t gguf_vocab_size(const GgufFile& f, const std::string& arch);

}  // namespace headprune::models::llama
