#include "models/phi3/phi3_family.h"

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/llama/llama_family.h"

namespace headprune::models::phi3 {
namespace {

/// `partial_rotary_factor` (top level, or inside rope_parameters / rope_scaling as transformers
/// 5 writes it) must be 1: Phi-3 rotates every dimension of a head; a partial rotary embedding
/// (Phi-4-mini's 0.75) is not implemented. Returns `j` without the key inside the RoPE object,
/// so that LLaMA's RoPE rules read the rest.
/// @throws headprune::Error naming `source` and the key.
nlohmann::json without_full_rotary_factor(nlohmann::json j, const std::string& source) {
  auto check = [&](const nlohmann::json& object, const std::string& where) {
    if (!object.is_object() || !object.contains("partial_rotary_factor")) return;
    if (json_optional<double>(object, "partial_rotary_factor", 1.0, source) != 1.0)
      throw Error(fmt::format("{}: {}partial_rotary_factor {} is not supported (a partial rotary "
                              "embedding is not implemented; only 1.0)",
                              source, where, object.at("partial_rotary_factor").dump()));
  };
  check(j, "");
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (!j.contains(key)) continue;
    check(j.at(key), std::string(key) + ".");
    if (j.at(key).is_object()) j.at(key).erase("partial_rotary_factor");
  }
  return j;
}

/// HF Phi3Config: no biases, rms_norm_eps 1e-5 and eos 32000 when absent, no sliding window
/// when absent; `original_max_position_embeddings` only matters to LongRoPE (refused).
class Phi3Family final : public llama::LlamaFamily {
 public:
  Phi3Family() : LlamaFamily("Phi3", "Phi-3", llama::NativeHeadDim::kFillsHiddenIn4) {}
  std::string model_type() const override { return "phi3"; }

  std::string description(const ModelConfig& c) const override {
    const auto window = llama::attention_span(c);
    return fmt::format("Phi-3 decoder (HF Phi3ForCausalLM): {} query heads share {} KV heads ({} per "
                       "group) in each layer, fused qkv_proj / gate_up_proj; {}",
                       c.num_attention_heads, c.num_key_value_heads, c.kv_group_size(), window);
  }

  /// HF Phi3Config's keys beyond the common ones.
  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {
        "num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
        "tie_word_embeddings", "bos_token_id", "eos_token_id", "sliding_window",
        "original_max_position_embeddings", "partial_rotary_factor"};
    return keys;
  }
  int64_t default_max_position_embeddings() const override { return 4096; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    llama::parse_llama_fields(without_full_rotary_factor(j, source), source, c);
    c.rms_norm_eps = json_optional<double>(j, "rms_norm_eps", 1e-5, source);
    if (!j.contains("eos_token_id")) c.eos_token_id = 32000;
    json_optional<int64_t>(j, "original_max_position_embeddings", 4096, source);  // type-checked only
    llama::parse_sliding_window(j, source, 0, c);
    c.fused_projections = true;
  }
};

}  // namespace

const ModelFamily& family() {
  static const Phi3Family instance;
  return instance;
}

}  // namespace headprune::models::phi3
