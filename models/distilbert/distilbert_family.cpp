#include "models/distilbert/distilbert_family.h"

#include <fmt/format.h>

#include "models/bert/bert_family.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/remote_code.h"

namespace headprune::generated {
/// models/distilbert/modeling_headprune_distilbert.py, embedded by CMakeLists.txt.
extern const char* const kModelingHeadpruneDistilbertPy;
extern const char* const kModelingHeadpruneBertPy;
}  // namespace headprune::generated

namespace headprune::models::distilbert {
namespace {

/// HF DistilBertConfig (transformers `configuration_distilbert.py`): `dim`, `n_heads`,
/// `n_layers`, `hidden_dim`, `activation` for BERT's hidden_size, num_attention_heads,
/// num_hidden_layers, intermediate_size, hidden_act; LayerNorm eps fixed at 1e-12 in the
/// modelling code; no token types, no pooler. `sinusoidal_pos_embds` only chooses how the
/// position table is initialised: the table is a saved weight, read like any other.
class DistilBertFamily final : public bert::EncoderFamily {
 public:
  std::string model_type() const override { return "distilbert"; }

  std::string description(const ModelConfig& c) const override {
    return fmt::format("DistilBERT encoder (HF DistilBertModel): {} heads per layer, each with its "
                       "own Q/K/V; removed heads recorded in pruned_heads",
                       c.num_attention_heads);
  }

  const std::map<std::string, std::string>& attribute_map() const override {
    static const std::map<std::string, std::string> names = {
        {"hidden_size", "dim"}, {"num_attention_heads", "n_heads"}, {"num_hidden_layers", "n_layers"},
        {"intermediate_size", "hidden_dim"}, {"hidden_act", "activation"}};
    return names;
  }
  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {"dim", "n_heads", "n_layers", "hidden_dim", "activation",
                                               "sinusoidal_pos_embds", "dropout", "qa_dropout",
                                               "seq_classif_dropout", "tie_weights_"};
    return keys;
  }
  std::string default_hidden_act() const override { return "gelu"; }
  int64_t default_max_position_embeddings() const override { return 512; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-12;
    json_optional<bool>(j, "sinusoidal_pos_embds", false, source);
    if (c.hidden_act != "gelu" && c.hidden_act != "relu")
      throw Error(fmt::format("{}: activation '{}' is not supported (DistilBERT has gelu and relu)",
                              source, c.hidden_act));
  }

  std::string empty_layer_warning(int64_t layer) const override {
    return fmt::format("layer {} has no heads left: headprune, and transformers with "
                       "trust_remote_code=True, load this checkpoint; transformers' own "
                       "DistilBertModel does not (it divides by the head count)",
                       layer);
  }
  std::string export_note(const ModelConfig&) const override {
    return "transformers 4.x loads this folder natively (pruned_heads); transformers 5 removed head "
           "pruning: load it there with trust_remote_code=True (modeling_headprune_distilbert.py, "
           "registered in auto_map)";
  }
  /// DistilBertForSequenceClassification: relu(pre_classifier(h)), then `classifier`.
  std::optional<ClassificationLayout> classification_layout(const ModelConfig&) const override {
    return ClassificationLayout{"DistilBertForSequenceClassification", "distilbert.", "pre_classifier", false,
                                "relu", "classifier"};
  }
  /// models/distilbert/modeling_headprune_distilbert.py: DistilBertModel (and its
  /// ForSequenceClassification) with per-layer head counts read from pruned_heads, for transformers 5.
  const RemoteCode* remote_code() const override {
    static const RemoteCode code{
        "modeling_headprune_distilbert.py", generated::kModelingHeadpruneDistilbertPy,
        nlohmann::json{{"AutoModel", "modeling_headprune_distilbert.HeadpruneDistilBertModel"},
                       {"AutoModelForSequenceClassification",
                        "modeling_headprune_distilbert.HeadpruneDistilBertForSequenceClassification"}},
        {{"modeling_headprune_bert.py", generated::kModelingHeadpruneBertPy}}};
    return &code;
  }
};

}  // namespace

const ModelFamily& family() {
  static const DistilBertFamily instance;
  return instance;
}

}  // namespace headprune::models::distilbert
