#include "models/mpnet/mpnet_family.h"

#include <fmt/format.h>

#include "models/bert/bert_family.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/remote_code.h"

namespace headprune::generated {
/// models/mpnet/modeling_headprune_mpnet.py, embedded by CMakeLists.txt.
extern const char* const kModelingHeadpruneMpnetPy;
extern const char* const kModelingHeadpruneBertPy;
}  // namespace headprune::generated

namespace headprune::models::mpnet {
namespace {

/// HF MPNetConfig (transformers `configuration_mpnet.py`). MPNetEmbeddings counts positions
/// after padding_idx 1 whatever pad_token_id says, and MPNetEncoder buckets relative positions
/// into 32 buckets up to distance 128 whatever relative_attention_num_buckets says (the table
/// has that many rows; fewer than 32 would index past it).
class MpnetFamily final : public bert::EncoderFamily {
 public:
  std::string model_type() const override { return "mpnet"; }

  std::string description(const ModelConfig& c) const override {
    return fmt::format("MPNet encoder (HF MPNetModel): {} heads per layer, each with its own Q/K/V "
                       "and its column of the shared relative position bias; removed heads recorded "
                       "in pruned_heads",
                       c.num_attention_heads);
  }

  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {"relative_attention_num_buckets", "layer_norm_eps"};
    return keys;
  }
  std::string default_hidden_act() const override { return "gelu"; }
  int64_t default_max_position_embeddings() const override { return 512; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    c.type_vocab_size = 0;
    c.position_padding_idx = 1;
    c.layer_norm_eps = json_optional<double>(j, "layer_norm_eps", 1e-12, source);
    c.relative_attention_num_buckets = json_optional<int64_t>(j, "relative_attention_num_buckets", 32, source);
    if (c.relative_attention_num_buckets < 32)
      throw Error(fmt::format("{}: relative_attention_num_buckets {} is below the 32 buckets MPNet "
                              "computes (transformers would index past the table)",
                              source, c.relative_attention_num_buckets));
    if (c.max_position_embeddings < 3)
      throw Error(fmt::format("{}: max_position_embeddings {} leaves no position after padding_idx 1",
                              source, c.max_position_embeddings));
    const std::set<std::string> acts = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
    if (!acts.count(c.hidden_act))
      throw Error(fmt::format("{}: hidden_act '{}' is not supported (gelu, gelu_new, relu)", source,
                              c.hidden_act));
  }

  std::string empty_layer_warning(int64_t layer) const override {
    return fmt::format("layer {} has no heads left: headprune and modeling_headprune_mpnet.py "
                       "(trust_remote_code=True) load this checkpoint",
                       layer);
  }
  std::string export_note(const ModelConfig&) const override {
    return "load with trust_remote_code=True (modeling_headprune_mpnet.py, registered in auto_map) "
           "in transformers 4 and 5 alike: transformers 4's own MPNetModel prunes q/k/v/o but not "
           "the relative position bias all layers share, and fails on pruned_heads; transformers 5 "
           "removed head pruning";
  }
  /// MPNetForSequenceClassification (MPNetClassificationHead): tanh(classifier.dense(h)), then
  /// classifier.out_proj.
  std::optional<ClassificationLayout> classification_layout(const ModelConfig&) const override {
    return ClassificationLayout{"MPNetForSequenceClassification", "mpnet.", "classifier.dense", false, "tanh",
                                "classifier.out_proj"};
  }
  /// models/mpnet/modeling_headprune_mpnet.py: MPNetModel (and its ForSequenceClassification)
  /// with per-layer head counts read from pruned_heads, each layer taking its heads' columns of
  /// the shared bias.
  const RemoteCode* remote_code() const override {
    static const RemoteCode code{
        "modeling_headprune_mpnet.py", generated::kModelingHeadpruneMpnetPy,
        nlohmann::json{{"AutoModel", "modeling_headprune_mpnet.HeadpruneMPNetModel"},
                       {"AutoModelForSequenceClassification",
                        "modeling_headprune_mpnet.HeadpruneMPNetForSequenceClassification"}},
        {{"modeling_headprune_bert.py", generated::kModelingHeadpruneBertPy}}};
    return &code;
  }
};

}  // namespace

const ModelFamily& family() {
  static const MpnetFamily instance;
  return instance;
}

}  // namespace headprune::models::mpnet
