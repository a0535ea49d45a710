// Qwen2's GgufCodec (models/gguf_codec.h): llama.cpp's `qwen2` architecture read and written
// through the shared LLaMA-style reader and writer (models/llama/llama_gguf.h,
// llama_gguf_export.h) with Qwen2's layout.
//
// Names (llama.cpp gguf-py tensor_mapping.py, MODEL_ARCH.QWEN2): LLaMA's, plus
// blk.N.attn_{q,k,v}.bias; Q/K rows unpermuted (llama.cpp runs qwen2 with NEOX rotary pairs,
// HF's rotate-half order). Config: the shared `qwen2.*` keys (convert_hf_to_gguf.py's
// Qwen2Model writes no others). llama.cpp's qwen2 sizes q_proj and o_proj as hidden × hidden
// (src/models/qwen2.cpp), so a Qwen2 whose heads no longer fill the width is written as `llama`
// (uniform) or `deci` (uneven layers), which compute the same with q/k rows interleaved; the
// `llama` reader reads such a file (q/k/v biases, no output bias) back as Qwen2.
#include "models/qwen2/qwen2_family.h"

#include "models/gguf_codec.h"
#include "models/llama/llama_gguf.h"
#include "models/llama/llama_gguf_export.h"
#include "models/llama/llama_gguf_names.h"

namespace headprune::models::qwen2 {
namespace {

nlohmann::json config_json(const GgufFile& f, const std::set<std::string>& names) {
  auto j = llama::gguf_decoder_config(f, "qwen2", names);
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["model_type"] = "qwen2";
  j["rope_theta"] = llama::gguf_real_or(f, "qwen2.rope.freq_base", 1e6);
  return j;
}

const llama::GgufDecoderLayout& layout() {
  static const llama::GgufDecoderLayout l = [] {
    llama::GgufDecoderLayout out;
    out.architecture = "qwen2";
    out.family = "Qwen2";
    for (const auto& [gguf, hf] : llama::kGgufLayerNames) out.layer_names.emplace_back(gguf, hf);
    out.modelled_keys = llama::decoder_gguf_keys("qwen2");
    out.permute_qk = false;
    out.bias_parts = {"attn_q", "attn_k", "attn_v"};
    out.config_json = config_json;
    return out;
  }();
  return l;
}

void check(const Checkpoint& checkpoint) { llama::check_decoder_gguf_exportable(checkpoint, "qwen2"); }

}  // namespace

const GgufCodec& gguf_codec() {
  static const llama::DecoderGgufCodec codec(layout(), check, /*fitting=*/true);
  return codec;
}

}  // namespace headprune::models::qwen2
