// Phi-3's GgufCodec (models/gguf_codec.h): llama.cpp's `phi3` architecture read and written
// through the shared LLaMA-style reader and writer (models/llama/llama_gguf.h,
// llama_gguf_export.h) with Phi-3's layout.
//
// Names (llama.cpp gguf-py tensor_mapping.py, MODEL_ARCH.PHI3): blk.N.{attn_norm, attn_qkv
// (HF qkv_proj), attn_output, ffn_norm, ffn_up (HF gate_up_proj: gate rows then up rows, which
// llama.cpp's SwiGLU splits in halves), ffn_down}; Q/K rows unpermuted (NEOX rotary pairs).
// Config: the shared `phi3.*` keys; `phi3.attention.sliding_window` is HF's sliding_window (as
// transformers' GGUF loader maps it; llama.cpp itself ignores Phi's window, so a window shorter
// than the context is refused on export); `phi3.rope.scaling.original_context_length` is
// original_max_position_embeddings. LongRoPE factor tensors (rope_factors_long / _short) are
// not mapped and so refused. llama.cpp's phi3 sizes q and o as hidden × hidden
// (src/models/phi3.cpp): a Phi-3 whose heads no longer fill the width is written as `llama`
// / `deci` with the projections split, which compute the same.
#include "models/phi3/phi3_family.h"

#include "models/gguf_codec.h"
#include "models/llama/llama_gguf.h"
#include "models/llama/llama_gguf_export.h"

namespace headprune::models::phi3 {
namespace {

nlohmann::json config_json(const GgufFile& f, const std::set<std::string>& names) {
  auto j = llama::gguf_decoder_config(f, "phi3", names);
  j["architectures"] = {"Phi3ForCausalLM"};
  j["model_type"] = "phi3";
  j["rms_norm_eps"] = llama::gguf_real_or(f, "phi3.attention.layer_norm_rms_epsilon", 1e-5);
  j["sliding_window"] = f.header.find("phi3.attention.sliding_window")
                            ? nlohmann::json(llama::gguf_integer(f, "phi3.attention.sliding_window"))
                            : nlohmann::json(nullptr);
  if (f.header.find("phi3.rope.scaling.original_context_length"))
    j["original_max_position_embeddings"] = llama::gguf_integer(f, "phi3.rope.scaling.original_context_length");
  return j;
}

void extra_metadata(const ModelConfig& c, GgufWriter& w) {
  // Written as convert_hf_to_gguf.py's Phi3MiniModel does; inert in llama.cpp (window off).
  if (c.sliding_window > 0) w.add("phi3.attention.sliding_window", gguf_u32(static_cast<uint32_t>(c.sliding_window)));
}

const llama::GgufDecoderLayout& layout() {
  static const llama::GgufDecoderLayout l = [] {
    llama::GgufDecoderLayout out;
    out.architecture = "phi3";
    out.family = "Phi-3";
    out.layer_names = {{"attn_norm", "input_layernorm"},   {"attn_qkv", "self_attn.qkv_proj"},
                       {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
                       {"ffn_up", "mlp.gate_up_proj"},      {"ffn_down", "mlp.down_proj"}};
    out.fused_modules = {{"self_attn.qkv_proj", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
                         {"mlp.gate_up_proj", {"mlp.gate_proj", "mlp.up_proj"}}};
    out.modelled_keys = llama::decoder_gguf_keys("phi3");
    out.modelled_keys.insert({"phi3.attention.sliding_window", "phi3.rope.scaling.original_context_length"});
    out.permute_qk = false;
    out.config_json = config_json;
    out.extra_metadata = extra_metadata;
    return out;
  }();
  return l;
}

void check(const Checkpoint& checkpoint) { llama::check_decoder_gguf_exportable(checkpoint, "phi3"); }

}  // namespace

const GgufCodec& gguf_codec() {
  static const llama::DecoderGgufCodec codec(layout(), check, /*fitting=*/true);
  return codec;
}

}  // namespace headprune::models::phi3
