// ModernBertModel as LlamaModel: the same computation (HF `modeling_modernbert.py`:
// ModernBertEmbeddings, ModernBertAttention with its rotary embedding per layer type,
// ModernBertMLP, ModernBertEncoderLayer, final_norm) under ModernBERT's tensor names, its fused
// Wqkv and Wi held split as LlamaModel holds Phi-3's (models/llama/fused_projections.h).
#include "models/layer_names.h"
#include "models/llama/fused_projections.h"
#include "models/llama/llama_model.h"
#include "models/modernbert/modernbert_family.h"

namespace headprune::models {
namespace {

/// Outside the layers: ModernBERT's tensor-name prefix and LlamaModel's.
const std::vector<LayerModuleName>& outer_names() {
  static const std::vector<LayerModuleName> names = {{"embeddings.tok_embeddings.", "model.embed_tokens."},
                                                     {"embeddings.norm.", "model.embed_norm."},
                                                     {"final_norm.", "model.norm."}};
  return names;
}

/// Within a layer (after "layers.N." / "model.layers.N."): ModernBERT's module and LlamaModel's,
/// the fused ones under Phi-3's fused names (split by llama::split_fused_projections).
const std::vector<LayerModuleName>& layer_modules() {
  static const std::vector<LayerModuleName> modules = {
      {"attn_norm.", "input_layernorm."},         {"attn.Wqkv.", "self_attn.qkv_proj."},
      {"attn.Wo.", "self_attn.o_proj."},          {"mlp_norm.", "post_attention_layernorm."},
      {"mlp.Wi.", "mlp.gate_up_proj."},           {"mlp.Wo.", "mlp.down_proj."}};
  return modules;
}

/// LlamaModel reading and writing ModernBertModel's tensor names.
class ModernBertModel final : public LlamaModel {
 public:
  using LlamaModel::LlamaModel;

  /// @throws headprune::Error for a layer tensor of no ModernBERT module, or a Wqkv / Wi of
  /// another shape than the config's. (A ModernBertFor* file's "model." prefix is taken off by
  /// load_checkpoint.)
  TensorMap weights_from_file(TensorMap weights, const std::string& source) const override {
    weights = rename_prefixes(std::move(weights), outer_names(), true);
    weights = rename_layer_tensors(std::move(weights), "layers.", "model.layers.", layer_modules(), true,
                                   "ModernBERT", source);
    return llama::split_fused_projections(std::move(weights), config(), source);
  }

  TensorMap weights_to_file(TensorMap weights) const override {
    weights = llama::fuse_projections(std::move(weights), config());
    weights = rename_layer_tensors(std::move(weights), "layers.", "model.layers.", layer_modules(), false,
                                   "ModernBERT", "export");
    return rename_prefixes(std::move(weights), outer_names(), false);
  }
};

}  // namespace

std::shared_ptr<AttentionModel> modernbert::make_model(const ModelConfig& config, const std::set<std::string>&) {
  return std::make_shared<ModernBertModel>(config);
}

}  // namespace headprune::models
