#include "models/qwen2/qwen2_family.h"

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/llama/llama_family.h"

namespace headprune::models::qwen2 {
namespace {

class Qwen2Family final : public llama::LlamaFamily {
 public:
  Qwen2Family() : LlamaFamily("Qwen2", "Qwen2", llama::NativeHeadDim::kFillsHiddenIn4) {}
  std::string model_type() const override { return "qwen2"; }

  std::string description(const ModelConfig& c) const override {
    return fmt::format("Qwen2 decoder (HF Qwen2ForCausalLM): {} query heads share {} KV heads "
                       "({} per group) in each layer; biases on q/k/v",
                       c.num_attention_heads, c.num_key_value_heads, c.kv_group_size());
  }

  /// HF Qwen2Config's keys: LlamaConfig's without attention_bias / mlp_bias, plus the
  /// sliding-window ones.
  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {
        "num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
        "tie_word_embeddings", "bos_token_id", "eos_token_id", "use_sliding_window",
        "sliding_window", "max_window_layers", "layer_types"};
    return keys;
  }
  int64_t default_max_position_embeddings() const override { return 32768; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    llama::parse_llama_fields(j, source, c);
    c.qkv_bias = true;  // Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
    parse_sliding_window_keys(j, source, c);
  }
};

}  // namespace

/// Qwen2's sliding-window keys. HF Qwen2Config drops `sliding_window` (and with it
/// `max_window_layers`) unless `use_sliding_window` is true, so with it false they change
/// nothing; Qwen2's per-layer sliding window itself is not implemented and is refused.
void parse_sliding_window_keys(const nlohmann::json& j, const std::string& source, const ModelConfig& c) {
  if (json_optional<bool>(j, "use_sliding_window", false, source))
    throw Error(fmt::format("{}: use_sliding_window true is not supported (Qwen2's per-layer "
                            "sliding window, from max_window_layers on, is not implemented; only "
                            "full causal attention)",
                            source));
  for (const char* key : {"sliding_window", "max_window_layers"})
    if (j.contains(key) && !j.at(key).is_null()) json_integer(j.at(key), fmt::format("{}: key '{}'", source, key));
  if (!j.contains("layer_types") || j.at("layer_types").is_null()) return;
  const auto& types = j.at("layer_types");
  if (!types.is_array() || static_cast<int64_t>(types.size()) != c.num_hidden_layers)
    throw Error(fmt::format("{}: layer_types must list {} layer types (one per layer)", source, c.num_hidden_layers));
  for (const auto& type : types)
    if (type != "full_attention")
      throw Error(fmt::format("{}: layer_types has {}; only \"full_attention\" is implemented", source, type.dump()));
}

const ModelFamily& family() {
  static const Qwen2Family instance;
  return instance;
}

}  // namespace headprune::models::qwen2
