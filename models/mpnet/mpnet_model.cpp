// MPNetModel as BertModel: the same computation (HF `modeling_mpnet.py`: MPNetEmbeddings,
// MPNetSelfAttention with the encoder's relative position bias, MPNetLayer, MPNetPooler) under
// MPNet's tensor names.
#include "models/bert/bert_model.h"
#include "models/layer_names.h"
#include "models/mpnet/mpnet_family.h"

namespace headprune::models {
namespace {

/// Within a layer (after "encoder.layer.N." in both): MPNet's module and BertModel's.
const std::vector<LayerModuleName>& layer_modules() {
  static const std::vector<LayerModuleName> modules = {
      {"attention.attn.q.", "attention.self.query."},
      {"attention.attn.k.", "attention.self.key."},
      {"attention.attn.v.", "attention.self.value."},
      {"attention.attn.o.", "attention.output.dense."},
      {"attention.LayerNorm.", "attention.output.LayerNorm."},
      {"intermediate.dense.", "intermediate.dense."},
      {"output.dense.", "output.dense."},
      {"output.LayerNorm.", "output.LayerNorm."}};
  return modules;
}

/// BertModel reading and writing MPNetModel's tensor names.
class MpnetModel final : public BertModel {
 public:
  using BertModel::BertModel;

  /// @throws headprune::Error for a layer tensor of no MPNet module.
  TensorMap weights_from_file(TensorMap weights, const std::string& source) const override {
    return rename_layer_tensors(std::move(weights), "encoder.layer.", "encoder.layer.", layer_modules(), true, "MPNet", source);
  }

  TensorMap weights_to_file(TensorMap weights) const override {
    return rename_layer_tensors(std::move(weights), "encoder.layer.", "encoder.layer.", layer_modules(), false, "MPNet", "export");
  }
};

}  // namespace

std::shared_ptr<AttentionModel> mpnet::make_model(const ModelConfig& config,
                                                  const std::set<std::string>& weight_names) {
  return std::make_shared<MpnetModel>(config, weight_names.count("pooler.dense.weight") > 0);
}

}  // namespace headprune::models
