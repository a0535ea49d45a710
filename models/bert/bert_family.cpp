#include "models/bert/bert_family.h"

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/remote_code.h"

namespace headprune::generated {
/// models/bert/modeling_headprune_bert.py, embedded by CMakeLists.txt (headprune_embed_text).
extern const char* const kModelingHeadpruneBertPy;
}  // namespace headprune::generated

namespace headprune::models::bert {
namespace {

/// HF BertConfig: every head has its own Q/K/V, all projections carry biases, and removed heads
/// are recorded in `pruned_heads`, which transformers 4.x applies at load time.
class BertFamily final : public EncoderFamily {
 public:
  std::string model_type() const override { return "bert"; }

  std::string description(const ModelConfig& c) const override {
    return fmt::format("BERT encoder (HF BertModel): {} heads per layer, each with its own Q/K/V; "
                       "removed heads recorded in pruned_heads",
                       c.num_attention_heads);
  }

  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {"type_vocab_size", "layer_norm_eps"};
    return keys;
  }
  std::string default_hidden_act() const override { return "gelu"; }
  int64_t default_max_position_embeddings() const override { return 512; }

  void parse_fields(const nlohmann::json& j, const std::string& source,
                    ModelConfig& c) const override {
    c.type_vocab_size = json_optional<int64_t>(j, "type_vocab_size", 2, source);
    c.layer_norm_eps = json_optional<double>(j, "layer_norm_eps", 1e-12, source);
    const std::set<std::string> acts = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
    if (!acts.count(c.hidden_act))
      throw Error(fmt::format("{}: hidden_act '{}' is not supported (gelu, gelu_new, relu)",
                              source, c.hidden_act));
  }

  std::string empty_layer_warning(int64_t layer) const override {
    return fmt::format(
        "layer {} has no heads left: headprune and transformers 4.46 (with torch 2.5) load "
        "this checkpoint, older transformers/torch versions fail on empty layers "
        "(transformers issue 17475); transformers 5 loads it with trust_remote_code=True",
        layer);
  }
  std::string export_note(const ModelConfig&) const override {
    return "transformers 4.x loads this folder natively (pruned_heads); transformers 5 removed head "
           "pruning: load it there with trust_remote_code=True (modeling_headprune_bert.py, "
           "registered in auto_map)";
  }
  /// BertForSequenceClassification: tanh(pooler.dense(h)) (BertPooler, the encoder's), then `classifier`.
  std::optional<ClassificationLayout> classification_layout(const ModelConfig&) const override {
    return ClassificationLayout{"BertForSequenceClassification", "bert.", "pooler.dense", true, "tanh", "classifier"};
  }
  /// models/bert/modeling_headprune_bert.py: BertModel / BertForSequenceClassification with
  /// per-layer head counts read from pruned_heads, for transformers 5.
  const RemoteCode* remote_code() const override {
    static const RemoteCode code{
        "modeling_headprune_bert.py", generated::kModelingHeadpruneBertPy,
        nlohmann::json{{"AutoModel", "modeling_headprune_bert.HeadpruneBertModel"},
                       {"AutoModelForSequenceClassification",
                        "modeling_headprune_bert.HeadpruneBertForSequenceClassification"}},
        {}};
    return &code;
  }
};

}  // namespace

nlohmann::json EncoderFamily::to_json(const ModelConfig& c) const {
  nlohmann::json j = c.raw;
  nlohmann::json pruned = nlohmann::json::object();
  for (const auto& [layer, heads] : c.pruned_heads)
    if (!heads.empty()) pruned[std::to_string(layer)] = heads;
  j["pruned_heads"] = pruned;
  return j;
}

const ModelFamily& family() {
  static const BertFamily instance;
  return instance;
}

}  // namespace headprune::models::bert
