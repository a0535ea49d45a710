#include "models/qwen3/qwen3_family.h"

#include <fmt/format.h>

#include "models/config.h"
#include "models/llama/llama_family.h"
#include "models/qwen2/qwen2_family.h"

namespace headprune::models::qwen3 {
namespace {

/// HF Qwen3Config: head_dim 128 when absent, attention_bias (all four projections, as LLaMA's),
/// q/k norms always; transformers has it from 4.51 on, and reads the explicit head_dim.
class Qwen3Family final : public llama::LlamaFamily {
 public:
  Qwen3Family() : LlamaFamily("Qwen3", "Qwen3", llama::NativeHeadDim::kExplicit) {}
  std::string model_type() const override { return "qwen3"; }

  std::string description(const ModelConfig& c) const override {
    return fmt::format("Qwen3 decoder (HF Qwen3ForCausalLM): {} query heads share {} KV heads "
                       "({} per group) of {} in each layer; RMS norms on each query/key head",
                       c.num_attention_heads, c.num_key_value_heads, c.kv_group_size(), c.head_dim);
  }

  /// HF Qwen3Config's keys: LlamaConfig's without mlp_bias, plus the sliding-window ones.
  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {
        "num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
        "tie_word_embeddings", "attention_bias", "bos_token_id", "eos_token_id",
        "use_sliding_window", "sliding_window", "max_window_layers", "layer_types"};
    return keys;
  }
  int64_t default_max_position_embeddings() const override { return 32768; }
  std::optional<int64_t> default_head_dim() const override { return 128; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    llama::parse_llama_fields(j, source, c);
    c.qk_norm = true;  // Qwen3Attention: q_norm / k_norm over head_dim
    qwen2::parse_sliding_window_keys(j, source, c);
  }

 protected:
  std::string v4_versions() const override { return "4.51+"; }
};

}  // namespace

const ModelFamily& family() {
  static const Qwen3Family instance;
  return instance;
}

}  // namespace headprune::models::qwen3
