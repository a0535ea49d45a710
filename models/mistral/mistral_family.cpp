#include "models/mistral/mistral_family.h"

#include <fmt/format.h>

#include "models/config.h"
#include "models/llama/llama_family.h"

namespace headprune::models::mistral {
namespace {

/// HF MistralConfig: LlamaConfig without attention_bias / mlp_bias, head_dim read in every
/// version, `sliding_window` 4096 when absent (null: full attention).
class MistralFamily final : public llama::LlamaFamily {
 public:
  MistralFamily() : LlamaFamily("Mistral", "Mistral", llama::NativeHeadDim::kExplicit) {}
  std::string model_type() const override { return "mistral"; }

  std::string description(const ModelConfig& c) const override {
    const auto window = llama::attention_span(c);
    return fmt::format("Mistral decoder (HF MistralForCausalLM): {} query heads share {} KV heads "
                       "({} per group) in each layer; {}",
                       c.num_attention_heads, c.num_key_value_heads, c.kv_group_size(), window);
  }

  /// HF MistralConfig's keys beyond the common ones.
  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {
        "num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
        "tie_word_embeddings", "bos_token_id", "eos_token_id", "sliding_window"};
    return keys;
  }
  int64_t default_max_position_embeddings() const override { return 4096 * 32; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    llama::parse_llama_fields(j, source, c);
    llama::parse_sliding_window(j, source, 4096, c);
  }
};

}  // namespace

const ModelFamily& family() {
  static const MistralFamily instance;
  return instance;
}

}  // namespace headprune::models::mistral
