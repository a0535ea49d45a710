// Reading Karpathy's llama2.c legacy checkpoint format (`run.c` / `export.py legacy_export`) as an
// HF LLaMA config and HF-named tensors, so that one HF-convention code path serves both.
//
// Layout (all little-endian): 7 int32 `dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len` (vocab_size < 0: a separate classifier follows, |vocab_size| is the
// vocabulary), then float32 tensors token_embedding [vocab, dim], rms_att [L, dim],
// wq [L, dim, dim], wk [L, kv_dim, dim], wv [L, kv_dim, dim], wo [L, dim, dim], rms_ffn [L, dim],
// w1 [L, hidden, dim], w2 [L, dim, hidden], w3 [L, hidden, dim], rms_final [dim],
// freq_cis_real [seq_len, head_dim/2], freq_cis_imag [seq_len, head_dim/2], and wcls [vocab, dim]
// only when not shared. head_dim = dim / n_heads, kv_dim = n_kv_heads * head_dim; each matrix is
// a torch Linear weight [out, in].
#pragma once

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/formats/llama2c_header.h"
#include "models/formats/safetensors.h"

namespace headprune::models {

/// A llama2.c checkpoint as an HF LLaMA model.
struct Llama2cCheckpoint {
  Llama2cHeader header;
  nlohmann::json config_json;  ///< an HF LlamaForCausalLM config.json (model_type "llama"; the
                               ///< registry's read_config parses it)
  TensorMap weights;           ///< HF key names (model.layers.N.self_attn.q_proj.weight, ...)
};

/// Reads `file`. q_proj/k_proj rows are permuted within each head from llama2.c's interleaved
/// rotary pairs (2i, 2i+1) to HF's halves (i, i + head_dim/2): per head, new row order
/// [0, 2, 4, ..., 1, 3, 5, ...] (the transformation of transformers'
/// convert_llama_weights_to_hf.py). rms_norm_eps is 1e-5 and rope_theta 10000 (run.c's values);
/// freq_cis is checked for size but not used.
/// @throws headprune::Error naming the file: unreadable, header too short or with non-positive
///         / inconsistent dimensions (dim not divisible by n_heads, n_heads by n_kv_heads, odd
///         head_dim), or a size different from the one the header implies (both sizes given).
Llama2cCheckpoint read_llama2c(const std::filesystem::path& file);

/// Per head of `n_heads` rows blocks of `head_dim`, reorders rows from interleaved rotary pairs
/// to rotate-half order. w: [n_heads * head_dim, in] -> same shape.
torch::Tensor permute_rotary_rows(const torch::Tensor& w, int64_t n_heads, int64_t head_dim);

}  // namespace headprune::models
