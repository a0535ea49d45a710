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
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/formats/gguf_writer.h"
#include "models/gguf_codec.h"

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
  /// Per-layer parts whose `blk.N.<part>.bias` is read too (Qwen2's attn_q/k/v); others' are refused.
  std::set<std::string> bias_parts;
  /// Fused HF modules (Phi-3's self_attn.qkv_proj, mlp.gate_up_proj) -> the split modules whose
  /// rows they hold in order; the writer concatenates those (after K/V copies and permutation).
  std::map<std::string, std::vector<std::string>> fused_modules;
  /// The HF config.json of the file, given the HF names of its tensors (no lm_head.weight:
  /// tied embeddings; biases present or not).
  nlohmann::json (*config_json)(const GgufFile& file, const std::set<std::string>& hf_names) = nullptr;
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
/// (9.99999975e-06 -> 1e-05). The config.json made is parsed by `read_config` (the registry's,
/// handed down: models/gguf_codec.h ConfigReader).
/// @throws headprune::Error naming the file and the key or tensor: a missing required key, a key
///         of the architecture the layout does not model (rope scaling, experts, per-layer head
///         arrays, partial rotary dimensions), a tensor it does not map, a missing or
///         mis-shaped tensor, or any GGUF format violation.
GgufModel read_decoder_gguf(GgufFile file, const GgufDecoderLayout& layout, ConfigReader read_config);

/// read_decoder_gguf with LLaMA's layout (architecture `llama`).
GgufModel read_llama_gguf(GgufFile file, ConfigReader read_config);

/// The `<arch>.*` keys every LLaMA-style layout reads: context_length, embedding_length,
/// block_count, feed_forward_length, attention.head_count[_kv], rope.freq_base,
/// attention.layer_norm_rms_epsilon, rope.dimension_count, vocab_size, attention.key_length /
/// value_length (gguf.md "LLM").
std::set<std::string> decoder_gguf_keys(const std::string& arch);

/// The HF config keys those give (sizes, head_dim, rope_theta, rms_norm_eps, hidden_act silu,
/// tie_word_embeddings when `hf_names` has no lm_head.weight, bos/eos/pad ids from the
/// tokenizer keys present); the family adds architectures, model_type and its own keys.
/// @throws headprune::Error as gguf_integer and gguf_head_dim.
nlohmann::json gguf_decoder_config(const GgufFile& f, const std::string& arch, const std::set<std::string>& hf_names);

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
