// Gemma 3's GgufCodec (models/gguf_codec.h): llama.cpp's `gemma3` architecture read and written
// through the shared LLaMA-style reader and writer (models/llama/llama_gguf.h,
// llama_gguf_export.h) with Gemma's layout. Writing needs what llama.cpp's gemma3 graph assumes
// (below) and the same heads in every layer (one attention.head_count); anything else is
// refused with the reason.
//
// Names (llama.cpp gguf-py tensor_mapping.py, MODEL_ARCH.GEMMA3): blk.N.{attn_norm, attn_q,
// attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, post_attention_norm, ffn_norm,
// post_ffw_norm, ffn_gate, ffn_up, ffn_down}; norm weights are stored as 1 + w
// (convert_hf_to_gguf.py's Gemma3Model adds 1), Q/K rows unpermuted. Config: `gemma3.*` keys;
// what the file does not say is what llama.cpp's gemma3 graph and transformers' Gemma3TextConfig
// both assume: every 6th layer global, the others sliding with RoPE base 10000, the tanh GELU,
// query_pre_attn_scalar = head_dim (hidden / heads for the 62-layer 27B, as llama.cpp's
// f_attention_scale), no soft-capping.
#include "models/gemma3/gemma3_family.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "models/gguf_codec.h"
#include "models/llama/llama_gguf.h"
#include "models/llama/llama_gguf_export.h"
#include "models/llama/llama_model.h"

namespace headprune::models::gemma3 {
namespace {

nlohmann::json config_json(const GgufFile& f, const std::set<std::string>& names) {
  const auto layers = llama::gguf_integer(f, "gemma3.block_count");
  const auto hidden = llama::gguf_integer(f, "gemma3.embedding_length");
  const auto heads = llama::gguf_integer(f, "gemma3.attention.head_count");
  const auto head_dim = llama::gguf_head_dim(f, "gemma3");
  auto layer_types = nlohmann::json::array();
  for (int64_t l = 0; l < layers; ++l) layer_types.push_back((l + 1) % 6 != 0 ? "sliding_attention" : "full_attention");
  return {{"architectures", {"Gemma3ForCausalLM"}},
          {"model_type", "gemma3_text"},
          {"vocab_size", llama::gguf_vocab_size(f, "gemma3")},
          {"hidden_size", hidden},
          {"intermediate_size", llama::gguf_integer(f, "gemma3.feed_forward_length")},
          {"num_hidden_layers", layers},
          {"num_attention_heads", heads},
          {"num_key_value_heads", llama::gguf_integer_or(f, "gemma3.attention.head_count_kv", heads)},
          {"head_dim", head_dim},
          {"query_pre_attn_scalar", layers == 62 ? hidden / heads : head_dim},
          {"max_position_embeddings", llama::gguf_integer(f, "gemma3.context_length")},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"rms_norm_eps", llama::gguf_real_or(f, "gemma3.attention.layer_norm_rms_epsilon", 1e-6)},
          {"rope_theta", llama::gguf_real_or(f, "gemma3.rope.freq_base", 1e6)},
          {"rope_local_base_freq", 10000.0},
          {"sliding_window", llama::gguf_integer(f, "gemma3.attention.sliding_window")},
          {"layer_types", layer_types},
          {"tie_word_embeddings", names.count("lm_head.weight") == 0},
          {"attention_bias", false},
          {"final_logit_softcapping", nullptr},
          {"attn_logit_softcapping", nullptr},
          {"bos_token_id", llama::gguf_integer_or(f, "tokenizer.ggml.bos_token_id", 2)},
          {"eos_token_id", llama::gguf_integer_or(f, "tokenizer.ggml.eos_token_id", 1)},
          {"pad_token_id", llama::gguf_integer_or(f, "tokenizer.ggml.padding_token_id", 0)},
          {"torch_dtype", "float32"}};
}

void extra_metadata(const ModelConfig& c, GgufWriter& w) {
  w.add("gemma3.attention.sliding_window", gguf_u32(static_cast<uint32_t>(c.sliding_window)));
}

/// Why llama.cpp's gemma3 graph would compute `c` differently, or "".
std::string unlike_llama_cpp(const ModelConfig& c) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const bool sliding = !c.sliding_layers.empty() && c.sliding_layers[static_cast<std::size_t>(l)];
    if (sliding != ((l + 1) % 6 != 0))
      return fmt::format("layer {} is {} attention; llama.cpp's gemma3 makes every 6th layer global and the others "
                         "sliding",
                         l, sliding ? "sliding" : "full");
  }
  if (c.num_hidden_layers == 62)
    return "it has 62 layers (the 27B), whose attention scale llama.cpp takes from hidden / heads, which pruning "
           "changes";
  if (c.query_pre_attn_scalar != static_cast<double>(c.head_dim))
    return fmt::format("query_pre_attn_scalar {} is not head_dim {} (llama.cpp's scale)", c.query_pre_attn_scalar,
                       c.head_dim);
  if (c.rope_local_theta != 10000.0)
    return fmt::format("rope_local_base_freq {} is not llama.cpp's fixed 10000", c.rope_local_theta);
  if (c.hidden_act != "gelu_pytorch_tanh") return fmt::format("hidden_activation '{}' is not gelu_pytorch_tanh", c.hidden_act);
  if (c.attention_bias || c.qkv_bias || c.mlp_bias) return "it has attention or MLP biases";
  return "";
}

const llama::GgufDecoderLayout& layout() {
  static const llama::GgufDecoderLayout l = [] {
    llama::GgufDecoderLayout out;
    out.architecture = "gemma3";
    out.family = "Gemma 3";
    out.layer_names = {{"attn_norm", "input_layernorm"},          {"attn_q", "self_attn.q_proj"},
                       {"attn_k", "self_attn.k_proj"},            {"attn_v", "self_attn.v_proj"},
                       {"attn_output", "self_attn.o_proj"},       {"attn_q_norm", "self_attn.q_norm"},
                       {"attn_k_norm", "self_attn.k_norm"},       {"post_attention_norm", "post_attention_layernorm"},
                       {"ffn_norm", "pre_feedforward_layernorm"}, {"post_ffw_norm", "post_feedforward_layernorm"},
                       {"ffn_gate", "mlp.gate_proj"},             {"ffn_up", "mlp.up_proj"},
                       {"ffn_down", "mlp.down_proj"}};
    out.modelled_keys = {"gemma3.context_length", "gemma3.embedding_length", "gemma3.block_count",
                         "gemma3.feed_forward_length", "gemma3.attention.head_count", "gemma3.attention.head_count_kv",
                         "gemma3.attention.key_length", "gemma3.attention.value_length",
                         "gemma3.attention.layer_norm_rms_epsilon", "gemma3.rope.freq_base",
                         "gemma3.attention.sliding_window", "gemma3.vocab_size", "gemma3.rope.dimension_count"};
    out.permute_qk = false;
    out.norms_hold_one_plus_weight = true;
    out.config_json = config_json;
    out.extra_metadata = extra_metadata;
    return out;
  }();
  return l;
}

void check(const Checkpoint& checkpoint) {
  if (const auto why = unlike_llama_cpp(checkpoint.model->config()); !why.empty())
    throw Error(fmt::format("export-gguf: {}: llama.cpp's gemma3 architecture would compute this model "
                            "differently: {}",
                            checkpoint.dir.string(), why));
}

}  // namespace

const GgufCodec& gguf_codec() {
  static const llama::DecoderGgufCodec codec(layout(), check, /*fitting=*/false);
  return codec;
}

}  // namespace headprune::models::gemma3
