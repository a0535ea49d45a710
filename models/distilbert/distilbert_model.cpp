// DistilBertModel as BertModel: the same computation (HF `modeling_distilbert.py`: Embeddings,
// MultiHeadSelfAttention, FFN, post-LN TransformerBlock) under DistilBERT's tensor names.
#include <array>
#include <utility>

#include <fmt/format.h>

#include "models/bert/bert_model.h"
#include "models/distilbert/distilbert_family.h"
#include "models/errors.h"

namespace headprune::models {
namespace {

/// Within a layer: DistilBERT's module (after "transformer.layer.N.") and BertModel's (after
/// "encoder.layer.N.").
constexpr std::array<std::pair<const char*, const char*>, 8> kLayerModules = {{
    {"attention.q_lin.", "attention.self.query."},
    {"attention.k_lin.", "attention.self.key."},
    {"attention.v_lin.", "attention.self.value."},
    {"attention.out_lin.", "attention.output.dense."},
    {"sa_layer_norm.", "attention.output.LayerNorm."},
    {"ffn.lin1.", "intermediate.dense."},
    {"ffn.lin2.", "output.dense."},
    {"output_layer_norm.", "output.LayerNorm."},
}};

/// `key` with the layer prefix `from` and a module of `kLayerModules` (column `from_column`)
/// renamed to `to` and the other column; unchanged when it is not a layer tensor.
/// @throws headprune::Error for a layer tensor of no known module (named with `source`).
std::string rename_layer_key(const std::string& key, const std::string& from, const std::string& to,
                             bool from_distilbert, const std::string& source) {
  if (key.rfind(from, 0) != 0) return key;
  const auto dot = key.find('.', from.size());
  if (dot == std::string::npos) return key;
  const auto index = key.substr(from.size(), dot - from.size() + 1);  // "N."
  const auto rest = key.substr(dot + 1);
  for (const auto& [distil, bert] : kLayerModules) {
    const std::string have = from_distilbert ? distil : bert, want = from_distilbert ? bert : distil;
    if (rest.rfind(have, 0) == 0) return to + index + want + rest.substr(have.size());
  }
  throw Error(fmt::format("{}: tensor '{}' is not part of a DistilBERT layer (q_lin, k_lin, v_lin, "
                          "out_lin, sa_layer_norm, ffn.lin1, ffn.lin2, output_layer_norm)",
                          source, key));
}

/// BertModel reading and writing DistilBertModel's tensor names.
class DistilBertModel final : public BertModel {
 public:
  using BertModel::BertModel;

  /// @throws headprune::Error for a DistilBertFor* file (its keys under "distilbert.": the task
  /// heads are not modelled yet) or an unknown layer tensor.
  TensorMap weights_from_file(TensorMap weights, const std::string& source) const override {
    if (weights.count("distilbert.embeddings.word_embeddings.weight"))
      throw Error(fmt::format("{}: a DistilBertFor* checkpoint (its encoder under 'distilbert.'): "
                              "headprune reads DistilBertModel checkpoints, as sentence-transformers "
                              "saves them; save the task model's .distilbert alone",
                              source));
    TensorMap out;
    for (auto& [key, tensor] : weights)
      out[rename_layer_key(key, "transformer.layer.", "encoder.layer.", true, source)] = std::move(tensor);
    return out;
  }

  TensorMap weights_to_file(TensorMap weights) const override {
    TensorMap out;
    for (auto& [key, tensor] : weights)
      out[rename_layer_key(key, "encoder.layer.", "transformer.layer.", false, "export")] = std::move(tensor);
    return out;
  }
};

}  // namespace

std::shared_ptr<AttentionModel> distilbert::make_model(const ModelConfig& config,
                                                       const std::set<std::string>&) {
  return std::make_shared<DistilBertModel>(config, false);
}

}  // namespace headprune::models
