// RobertaModel / XLMRobertaModel as BertModel: HF `modeling_roberta.py` is BertModel's
// computation with RobertaEmbeddings' positions (ModelConfig::position_padding_idx, set by the
// family) and the same tensor names.
#include <fmt/format.h>

#include "models/bert/bert_model.h"
#include "models/errors.h"
#include "models/roberta/roberta_family.h"

namespace headprune::models {
namespace {

/// BertModel refusing RobertaFor* / XLMRobertaFor* files (the encoder under "roberta.", a task
/// head beside it: not modelled yet).
class RobertaModel final : public BertModel {
 public:
  using BertModel::BertModel;

  /// @throws headprune::Error for a task-model file (keys under "roberta.").
  TensorMap weights_from_file(TensorMap weights, const std::string& source) const override {
    if (weights.count("roberta.embeddings.word_embeddings.weight"))
      throw Error(fmt::format("{}: a task model's checkpoint (RobertaFor* / XLMRobertaFor*: the "
                              "encoder under 'roberta.', a task head beside it): headprune reads the "
                              "encoder alone, as sentence-transformers saves it; save the task "
                              "model's .roberta alone",
                              source));
    return weights;
  }
};

}  // namespace

std::shared_ptr<AttentionModel> roberta::make_model(const ModelConfig& config,
                                                    const std::set<std::string>& weight_names) {
  return std::make_shared<RobertaModel>(config, weight_names.count("pooler.dense.weight") > 0);
}

}  // namespace headprune::models
