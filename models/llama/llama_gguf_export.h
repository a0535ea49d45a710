// A LLaMA checkpoint (HF LlamaForCausalLM, pruned or not) as a llama.cpp GGUF file: the inverse
// of llama_gguf.h's reader.
//
// Names: llama_gguf_names.h. q_proj / k_proj rows are permuted per head from HF's rotate-half
// order to llama.cpp's interleaved rotary pairs (convert_hf_to_gguf.py, LlamaModel.permute).
// Metadata: `general.architecture`, `general.name`, `general.file_type` and the architecture's
// keys (gguf.md "LLM"; llama.cpp llama-arch.cpp): block_count, context_length,
// embedding_length, feed_forward_length, attention.head_count[_kv], rope.freq_base,
// attention.layer_norm_rms_epsilon, rope.dimension_count, vocab_size, and
// attention.key_length / value_length (head_dim) whenever heads × head_dim differs from the
// width, as after pruning. With a byte-level BPE tokenizer: llama.cpp's `tokenizer.ggml.*` keys
// (model "gpt2") and the chat template.
//
// Head layout. llama.cpp's query head i reads KV head i / (n_head / n_head_kv). A pruned layer
// whose kept query heads no longer form equal consecutive groups is written exactly by
// duplicating K/V heads (each exported KV head serves one block of equal size). When every
// layer then has the same (n_head, n_head_kv) and n_head > 0, the file is architecture `llama`;
// otherwise `deci` (llama.cpp src/models/deci.cpp: per-layer `deci.attention.head_count` /
// `head_count_kv` arrays, a layer with 0 query heads has no attention), checked with llama.cpp
// as vendored in llama-cpp-python 0.3.36 (tools/check_gguf_llama_cpp.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/checkpoint.h"
#include "models/gguf_codec.h"
#include "models/llama/llama_gguf.h"

namespace headprune::models::llama {

/// The llama.cpp layout of a layer whose query head i uses local KV head kv_of_query[i]
/// (ascending groups, as LlamaAttentionImpl holds them): the largest group size g dividing
/// n_head such that each block of g consecutive query heads uses one KV head; exported KV head
/// k copies kv_of_query[k * g]. Exact: every query head reads the keys/values it read before.
GgufLayerShape llama_cpp_layer_heads(const std::vector<int64_t>& kv_of_query);

/// Per head of `n_heads` blocks of `head_dim` rows, reorders rows from HF's rotate-half order
/// to llama.cpp's interleaved pairs (new row 2i = old i, 2i+1 = old i + head_dim/2): the
/// inverse of permute_rotary_rows (models/formats/llama2c.h). w: [n_heads * head_dim, in].
torch::Tensor interleave_rotary_rows(const torch::Tensor& w, int64_t n_heads, int64_t head_dim);

/// The checks every LLaMA-style GGUF export makes before looking at heads (what pruning cannot
/// change), `architecture` named in the message.
/// @throws headprune::Error: not a LLaMA-style checkpoint, a sliding window shorter than
///         max_position_embeddings (llama.cpp attends to every position), an activation other than silu.
void check_decoder_gguf_exportable(const Checkpoint& checkpoint, const std::string& architecture);

/// check_decoder_gguf_exportable for `llama`, and q/k norms refused (llama.cpp's llama has none).
void check_llama_gguf_exportable(const Checkpoint& checkpoint);

/// Whether every layer's query heads × head_dim equal hidden_size: llama.cpp's qwen2 and phi3
/// size q_proj / o_proj as hidden × hidden (llama.cpp src/models/qwen2.cpp, phi3.cpp).
bool heads_fill_width(const ModelConfig& c);

/// The GGUF in `own`'s architecture (after check_decoder_gguf_exportable) when the heads fill
/// the width, else build_llama_gguf's `llama` / `deci` (the same computation: rotate-half RoPE
/// with q/k rows interleaved, q/k/v biases optional there) with a warning saying why.
/// @throws headprune::Error as build_decoder_gguf / build_llama_gguf.
GgufExport build_fitting_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name,
                              const GgufDecoderLayout& own);

/// Builds the GGUF of `checkpoint` after check_llama_gguf_exportable; `name`
/// goes to general.name. Architecture `llama` when every layer has the same (n_head,
/// n_head_kv) and n_head > 0, else `deci` (per_layer_heads).
/// @throws headprune::Error with the reason when the model cannot be written exactly for
///         llama.cpp: layer 0 without query heads (llama.cpp derives the head size from
///         layer 0); a tokenizer llama.cpp's gpt2 vocabulary cannot express (unknown
///         pre-tokenizer, special tokens other than one BOS prefix / one EOS suffix, more tokens
///         than embedding rows).
GgufExport build_llama_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name);

/// The GGUF of a LLaMA-style `checkpoint` in `layout`'s architecture (names, q/k permutation,
/// norms as 1 + w, its extra metadata), after the family's own checks: what build_llama_gguf
/// does for `llama`. Uneven layers are written as `deci` when layout.uneven_as_deci, else refused.
/// With a Gemma SentencePiece tokenizer, llama.cpp's "llama" vocabulary (gemma_gguf_vocabulary).
/// @throws headprune::Error as build_llama_gguf, or uneven layers the layout cannot hold.
GgufExport build_decoder_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name,
                              const GgufDecoderLayout& layout);

/// A family's GgufCodec made of its layout: reads `layout.architecture` with read_decoder_gguf;
/// writes after `check` (the family's refusals, which check_exportable runs too) in the layout's
/// architecture (build_decoder_gguf) or, when `fitting`, through build_fitting_gguf.
class DecoderGgufCodec final : public GgufCodec {
 public:
  using Check = void (*)(const Checkpoint& checkpoint);
  DecoderGgufCodec(const GgufDecoderLayout& layout, Check check, bool fitting)
      : layout_(layout), check_(check), fitting_(fitting) {}
  std::vector<std::string> architectures() const override { return {layout_.architecture}; }
  GgufModel read(GgufFile file, ConfigReader read_config) const override {
    return read_decoder_gguf(std::move(file), layout_, read_config);
  }
  void check_exportable(const Checkpoint& checkpoint) const override { check_(checkpoint); }
  GgufExport build(const Checkpoint& checkpoint, GgufExportType type, const std::string& name) const override;

 private:
  const GgufDecoderLayout& layout_;
  Check check_;
  bool fitting_;
};

}  // namespace headprune::models::llama
