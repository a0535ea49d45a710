// Qwen3's GgufCodec (models/gguf_codec.h): llama.cpp's `qwen3` architecture read and written
// through the shared LLaMA-style reader and writer (models/llama/llama_gguf.h,
// llama_gguf_export.h) with Qwen3's layout.
//
// Names (llama.cpp gguf-py tensor_mapping.py, MODEL_ARCH.QWEN3): LLaMA's, plus
// blk.N.attn_q_norm / attn_k_norm (HF q_norm / k_norm over head_dim); Q/K rows unpermuted (NEOX
// rotary pairs). Config: the shared `qwen3.*` keys, head_dim from attention.key_length.
// llama.cpp's qwen3 sizes q_proj as hidden × (head_dim × heads) from one head count for all
// layers (src/models/qwen3.cpp) and has no output-projection bias: uneven layers and
// attention_bias are refused (no other llama.cpp architecture has Qwen3's q/k norms).
#include "models/qwen3/qwen3_family.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "models/gguf_codec.h"
#include "models/llama/llama_gguf.h"
#include "models/llama/llama_gguf_export.h"
#include "models/llama/llama_gguf_names.h"

namespace headprune::models::qwen3 {
namespace {

nlohmann::json config_json(const GgufFile& f, const std::set<std::string>& names) {
  auto j = llama::gguf_decoder_config(f, "qwen3", names);
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["model_type"] = "qwen3";
  j["rope_theta"] = llama::gguf_real_or(f, "qwen3.rope.freq_base", 1e6);
  return j;
}

const llama::GgufDecoderLayout& layout() {
  static const llama::GgufDecoderLayout l = [] {
    llama::GgufDecoderLayout out;
    out.architecture = "qwen3";
    out.family = "Qwen3";
    for (const auto& [gguf, hf] : llama::kGgufLayerNames) out.layer_names.emplace_back(gguf, hf);
    out.layer_names.emplace_back("attn_q_norm", "self_attn.q_norm");
    out.layer_names.emplace_back("attn_k_norm", "self_attn.k_norm");
    out.modelled_keys = llama::decoder_gguf_keys("qwen3");
    out.permute_qk = false;
    out.config_json = config_json;
    return out;
  }();
  return l;
}

void check(const Checkpoint& checkpoint) {
  llama::check_decoder_gguf_exportable(checkpoint, "qwen3");
  if (checkpoint.model->config().attention_bias)
    throw Error(fmt::format("export-gguf: {} has attention_bias true; llama.cpp's qwen3 has no output-projection "
                            "bias, so no GGUF is written",
                            checkpoint.dir.string()));
}

}  // namespace

const GgufCodec& gguf_codec() {
  static const llama::DecoderGgufCodec codec(layout(), check, /*fitting=*/false);
  return codec;
}

}  // namespace headprune::models::qwen3
