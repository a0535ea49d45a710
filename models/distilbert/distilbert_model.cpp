// DistilBertModel as BertModel: the same computation (HF `modeling_distilbert.py`: Embeddings,
// MultiHeadSelfAttention, FFN, post-LN TransformerBlock) under DistilBERT's tensor names.
#include <fmt/format.h>

#include "models/bert/bert_model.h"
#include "models/layer_names.h"
#include "models/distilbert/distilbert_family.h"
#include "models/errors.h"

namespace headprune::models {
namespace {

/// Within a layer: DistilBERT's module (after "transformer.layer.N.") and BertModel's.
const std::vector<LayerModuleName>& layer_modules() {
  static const std::vector<LayerModuleName> modules = {
      {"attention.q_lin.", "attention.self.query."},   {"attention.k_lin.", "attention.self.key."},
      {"attention.v_lin.", "attention.self.value."},   {"attention.out_lin.", "attention.output.dense."},
      {"sa_layer_norm.", "attention.output.LayerNorm."}, {"ffn.lin1.", "intermediate.dense."},
      {"ffn.lin2.", "output.dense."},                   {"output_layer_norm.", "output.LayerNorm."}};
  return modules;
}

/// BertModel reading and writing DistilBertModel's tensor names.
class DistilBertModel final : public BertModel {
 public:
  using BertModel::BertModel;

  /// @throws headprune::Error for an unknown layer tensor. (A DistilBertFor* file's
  /// "distilbert." prefix is taken off by load_checkpoint.)
  TensorMap weights_from_file(TensorMap weights, const std::string& source) const override {
    return rename_layer_tensors(std::move(weights), "transformer.layer.", "encoder.layer.", layer_modules(), true,
                                      "DistilBERT", source);
  }

  TensorMap weights_to_file(TensorMap weights) const override {
    return rename_layer_tensors(std::move(weights), "transformer.layer.", "encoder.layer.", layer_modules(), false,
                                      "DistilBERT", "export");
  }
};

}  // namespace

std::shared_ptr<AttentionModel> distilbert::make_model(const ModelConfig& config,
                                                       const std::set<std::string>&) {
  return std::make_shared<DistilBertModel>(config, false);
}

}  // namespace headprune::models
