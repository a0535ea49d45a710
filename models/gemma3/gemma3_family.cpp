#include "models/gemma3/gemma3_family.h"

#include <cmath>

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/llama/llama_family.h"

namespace headprune::models::gemma3 {
namespace {

/// The RoPE keys Gemma3TextConfig reads (its own, not LLaMA's).
const char* const kRopeKeys[] = {"rope_theta", "rope_local_base_freq", "rope_scaling", "rope_parameters"};

/// RoPE: rope_theta (global layers, default 1e6) and rope_local_base_freq (sliding layers,
/// default 1e4), or transformers 5's nested rope_parameters; rope_scaling must be null (the
/// 4B+ checkpoints' linear scaling of the global layers is not implemented).
void parse_rope(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null())
    throw Error(fmt::format("{}: rope_scaling {} is not supported (only plain RoPE)", source, j.at("rope_scaling").dump()));
  if (j.contains("rope_parameters") && !j.at("rope_parameters").is_null()) {
    for (const auto& [name, value] : j.at("rope_parameters").items())
      if (name != "full_attention" && name != "sliding_attention")
        throw Error(fmt::format("{}: rope_parameters.{} is not supported (Gemma 3 takes full_attention and "
                                "sliding_attention)", source, name));
  }
  c.rope_theta = llama::nested_rope_theta(j, "full_attention", json_optional<double>(j, "rope_theta", 1e6, source), source);
  c.rope_local_theta = llama::nested_rope_theta(j, "sliding_attention",
                                         json_optional<double>(j, "rope_local_base_freq", 1e4, source), source);
}

/// Which layers slide: `layer_types`, else every layer but each sliding_window_pattern-th (6).
void parse_layer_types(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  if (j.contains("sliding_window") && j.at("sliding_window").is_null())
    throw Error(fmt::format("{}: sliding_window null is not supported for Gemma 3 (its local layers need a window)",
                            source));
  llama::parse_sliding_window(j, source, 4096, c);
  if (llama::read_layer_types(j, source, "Gemma 3", c)) return;
  const auto key = j.contains("_sliding_window_pattern") ? "_sliding_window_pattern" : "sliding_window_pattern";
  const auto pattern = json_optional<int64_t>(j, key, 6, source);
  if (pattern <= 0) throw Error(fmt::format("{}: {} must be positive", source, key));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) c.sliding_layers[static_cast<size_t>(l)] = (l + 1) % pattern != 0;
}

/// HF Gemma3TextConfig (transformers 4.50+): see the folder's header.
class Gemma3Family final : public llama::LlamaFamily {
 public:
  Gemma3Family() : LlamaFamily("Gemma3", "Gemma 3", llama::NativeHeadDim::kDividesHiddenIn5) {}
  std::string model_type() const override { return "gemma3_text"; }

  std::string description(const ModelConfig& c) const override {
    int64_t sliding = 0;
    for (bool s : c.sliding_layers) sliding += s ? 1 : 0;
    return fmt::format("Gemma 3 decoder (HF Gemma3ForCausalLM): {} query heads share {} KV heads ({} per group) "
                       "of {} in each layer; {} of {} layers attend through a window of {}",
                       c.num_attention_heads, c.num_key_value_heads, c.kv_group_size(), c.head_dim, sliding,
                       c.num_hidden_layers, c.sliding_window);
  }

  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {
        "num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_local_base_freq", "rope_scaling",
        "rope_parameters", "tie_word_embeddings", "attention_bias", "bos_token_id", "eos_token_id",
        "hidden_activation", "query_pre_attn_scalar", "sliding_window", "layer_types", "sliding_window_pattern",
        "_sliding_window_pattern", "final_logit_softcapping", "attn_logit_softcapping",
        "use_bidirectional_attention"};
    return keys;
  }
  std::string default_hidden_act() const override { return "gelu_pytorch_tanh"; }
  int64_t default_max_position_embeddings() const override { return 131072; }
  std::optional<int64_t> default_head_dim() const override { return 256; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    // Gemma3TextConfig reads hidden_activation; a conflicting `hidden_act` is refused.
    c.hidden_act = json_optional<std::string>(j, "hidden_activation", "gelu_pytorch_tanh", source);
    if (j.contains("hidden_act") && !j.at("hidden_act").is_null() && j.at("hidden_act") != c.hidden_act)
      throw Error(fmt::format("{}: hidden_act {} differs from hidden_activation '{}'; Gemma3TextConfig reads only "
                              "hidden_activation (remove hidden_act or make them equal)",
                              source, j.at("hidden_act").dump(), c.hidden_act));
    if (c.hidden_act != "gelu_pytorch_tanh")
      throw Error(fmt::format("{}: hidden_activation '{}' is not supported (gelu_pytorch_tanh)", source, c.hidden_act));
    auto llama_keys = j;
    for (const char* key : kRopeKeys) llama_keys.erase(key);
    llama::parse_llama_fields(llama_keys, source, c);
    c.tie_word_embeddings = json_optional<bool>(j, "tie_word_embeddings", true, source);
    c.bos_token_id = json_optional<int64_t>(j, "bos_token_id", 2, source);
    if (!j.contains("eos_token_id")) c.eos_token_id = 1;
    for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"})
      if (j.contains(key) && !j.at(key).is_null())
        throw Error(fmt::format("{}: {} {} is not supported (only null: no soft-capping)", source, key, j.at(key).dump()));
    if (json_optional<bool>(j, "use_bidirectional_attention", false, source))
      throw Error(fmt::format("{}: use_bidirectional_attention true is not supported (causal attention only)", source));
    parse_rope(j, source, c);
    parse_layer_types(j, source, c);
    c.query_pre_attn_scalar = json_optional<double>(j, "query_pre_attn_scalar", 256.0, source);
    if (c.query_pre_attn_scalar <= 0)
      throw Error(fmt::format("{}: query_pre_attn_scalar must be positive", source));
    c.qk_norm = true;
    c.sandwich_norms = true;
    c.rms_norm_offset = 1.0;
    c.embed_scale = std::sqrt(static_cast<double>(c.hidden_size));
  }

  /// LLaMA's, with `layer_types` written out: a dropped layer would shift sliding_window_pattern.
  nlohmann::json to_json(const ModelConfig& c) const override {
    auto j = LlamaFamily::to_json(c);
    j["layer_types"] = llama::layer_types_json(c);
    return j;
  }

 protected:
  std::string v4_versions() const override { return "4.50+"; }
};

}  // namespace

const ModelFamily& family() {
  static const Gemma3Family instance;
  return instance;
}

}  // namespace headprune::models::gemma3
