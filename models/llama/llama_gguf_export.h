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
#include <filesystem>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/checkpoint.h"
#include "models/formats/gguf_writer.h"

namespace headprune::models::llama {

/// How `export-gguf` stores the matrices (1-D norm weights are always F32, as llama.cpp's
/// converter does; Q8_0 falls back to F16 for rows that are not whole blocks of 32).
enum class GgufExportType { kF32, kF16, kQ8_0 };

/// "f32", "f16" or "q8_0". @throws headprune::UsageError naming the accepted values.
GgufExportType parse_gguf_export_type(const std::string& name);

/// One layer's heads as llama.cpp holds them.
struct LlamaCppLayerHeads {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  /// For each exported KV head, the layer's local KV head it copies (size n_head_kv).
  std::vector<int64_t> kv_source;
};

/// The llama.cpp layout of a layer whose query head i uses local KV head kv_of_query[i]
/// (ascending groups, as LlamaAttentionImpl holds them): the largest group size g dividing
/// n_head such that each block of g consecutive query heads uses one KV head; exported KV head
/// k copies kv_of_query[k * g]. Exact: every query head reads the keys/values it read before.
LlamaCppLayerHeads llama_cpp_layer_heads(const std::vector<int64_t>& kv_of_query);

/// Per head of `n_heads` blocks of `head_dim` rows, reorders rows from HF's rotate-half order
/// to llama.cpp's interleaved pairs (new row 2i = old i, 2i+1 = old i + head_dim/2): the
/// inverse of permute_rotary_rows (models/formats/llama2c.h). w: [n_heads * head_dim, in].
torch::Tensor interleave_rotary_rows(const torch::Tensor& w, int64_t n_heads, int64_t head_dim);

/// A GGUF file built from a checkpoint, ready to write.
struct LlamaGguf {
  GgufWriter writer;
  std::string architecture;  ///< "llama" or "deci"
  std::vector<LlamaCppLayerHeads> layers;
  bool has_tokenizer = false;
  std::vector<std::string> warnings;  ///< e.g. duplicated K/V heads, no tokenizer
};

/// The checks build_llama_gguf makes before looking at heads (what pruning cannot change), for
/// commands that prune first (`apply --gguf`, `prune --gguf`) to refuse before any work.
/// @throws headprune::Error: not a LLaMA checkpoint, biases, an activation other than silu.
void check_llama_gguf_exportable(const Checkpoint& checkpoint);

/// Builds the GGUF of `checkpoint` (a LLaMA model). `name` goes to general.name (default: the
/// checkpoint folder's name).
/// @throws headprune::Error with the reason when the model cannot be written exactly for
///         llama.cpp: not a LLaMA checkpoint; biases (attention_bias / mlp_bias); an activation
///         other than silu; layer 0 without query heads (llama.cpp derives the head size from
///         layer 0); a tokenizer llama.cpp's gpt2 vocabulary cannot express (unknown
///         pre-tokenizer, special tokens other than one BOS prefix / one EOS suffix, more tokens
///         than embedding rows).
LlamaGguf build_llama_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name = "");

/// Checks, before any work, that `file` can receive an export: not a folder, in an existing
/// folder, new unless `force`. @throws headprune::Error saying what to change.
void check_gguf_target(const std::filesystem::path& file, bool force);

/// build_llama_gguf, then written to `file` atomically after check_gguf_target.
LlamaGguf export_llama_gguf(const Checkpoint& checkpoint, const std::filesystem::path& file, bool force,
                            GgufExportType type);

/// Where `--gguf` of apply and prune puts the file inside an exported folder.
inline constexpr const char* kGgufFolderFile = "model.gguf";

}  // namespace headprune::models::llama
