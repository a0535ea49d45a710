#include "models/roberta/roberta_family.h"

#include <fmt/format.h>

#include "models/bert/bert_family.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/remote_code.h"

namespace headprune::generated {
/// models/roberta/modeling_headprune_roberta.py and the BERT file it imports, embedded by
/// CMakeLists.txt.
extern const char* const kModelingHeadpruneRobertaPy;
extern const char* const kModelingHeadpruneBertPy;
}  // namespace headprune::generated

namespace headprune::models::roberta {
namespace {

/// HF RobertaConfig / XLMRobertaConfig (transformers `configuration_roberta.py`,
/// `configuration_xlm_roberta.py`): BertConfig's keys with pad_token_id 1 by default; position
/// ids are padding_idx + 1, padding_idx + 2, ... for real tokens and padding_idx for padding,
/// padding_idx = pad_token_id (RobertaEmbeddings), so the position table's first
/// pad_token_id + 1 rows serve no real token.
class RobertaFamily final : public bert::EncoderFamily {
 public:
  /// `model_type` "roberta" or "xlm-roberta"; `hf_class` names the HF model class ("RobertaModel";
  /// its task class is "RobertaForSequenceClassification"); `stem` names the remote code's classes
  /// ("Roberta": HeadpruneRobertaModel, HeadpruneRobertaForSequenceClassification).
  RobertaFamily(std::string model_type, std::string hf_class, const std::string& stem)
      : model_type_(std::move(model_type)), hf_class_(std::move(hf_class)),
        task_class_(hf_class_.substr(0, hf_class_.size() - 5) + "ForSequenceClassification"),
        code_{"modeling_headprune_roberta.py", generated::kModelingHeadpruneRobertaPy,
              nlohmann::json{{"AutoModel", "modeling_headprune_roberta.Headprune" + stem + "Model"},
                             {"AutoModelForSequenceClassification",
                              "modeling_headprune_roberta.Headprune" + stem + "ForSequenceClassification"}},
              {{"modeling_headprune_bert.py", generated::kModelingHeadpruneBertPy}}} {}

  std::string model_type() const override { return model_type_; }

  std::string description(const ModelConfig& c) const override {
    return fmt::format("{} encoder (HF {}): {} heads per layer, each with its own Q/K/V, positions "
                       "counted after padding_idx {}; removed heads recorded in pruned_heads",
                       model_type_ == "roberta" ? "RoBERTa" : "XLM-RoBERTa", hf_class_,
                       c.num_attention_heads, c.position_padding_idx);
  }

  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {"type_vocab_size", "layer_norm_eps"};
    return keys;
  }
  std::string default_hidden_act() const override { return "gelu"; }
  int64_t default_max_position_embeddings() const override { return 512; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    c.type_vocab_size = json_optional<int64_t>(j, "type_vocab_size", 2, source);
    c.layer_norm_eps = json_optional<double>(j, "layer_norm_eps", 1e-12, source);
    c.pad_token_id = json_optional<int64_t>(j, "pad_token_id", 1, source);
    if (c.pad_token_id < 0 || c.pad_token_id >= c.vocab_size)
      throw Error(fmt::format("{}: pad_token_id {} is not a token of the vocabulary of {} ({} counts "
                              "positions after it)",
                              source, c.pad_token_id, c.vocab_size, hf_class_));
    if (c.max_position_embeddings < c.pad_token_id + 2)
      throw Error(fmt::format("{}: max_position_embeddings {} leaves no position after padding_idx {}",
                              source, c.max_position_embeddings, c.pad_token_id));
    c.position_padding_idx = c.pad_token_id;
    const std::set<std::string> acts = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
    if (!acts.count(c.hidden_act))
      throw Error(fmt::format("{}: hidden_act '{}' is not supported (gelu, gelu_new, relu)", source,
                              c.hidden_act));
  }

  std::string empty_layer_warning(int64_t layer) const override {
    return fmt::format("layer {} has no heads left: headprune and transformers 4.46 (with torch 2.5) "
                       "load this checkpoint; transformers 5 loads it with trust_remote_code=True",
                       layer);
  }
  std::string export_note(const ModelConfig&) const override {
    return fmt::format("transformers 4.x loads this folder natively ({} applies pruned_heads); "
                       "transformers 5 removed head pruning: load it there with trust_remote_code=True "
                       "(modeling_headprune_roberta.py, registered in auto_map, with the "
                       "modeling_headprune_bert.py it imports)",
                       hf_class_);
  }
  /// models/roberta/modeling_headprune_roberta.py: the BERT remote code's model with RoBERTa
  /// positions and the family's config class, for transformers 5.
  const RemoteCode* remote_code() const override { return &code_; }
  /// RobertaForSequenceClassification / XLMRobertaForSequenceClassification
  /// (RobertaClassificationHead): tanh(classifier.dense(h)), then classifier.out_proj.
  /// RoBERTa: byte-level BPE; XLM-RoBERTa: SentencePiece Unigram.
  std::vector<std::string> tokenizer_models(const ModelConfig&) const override {
    return {model_type_ == "roberta" ? "BPE" : "Unigram"};
  }
  std::optional<ClassificationLayout> classification_layout(const ModelConfig&) const override {
    return ClassificationLayout{task_class_, "roberta.", "classifier.dense", false, "tanh", "classifier.out_proj"};
  }

 private:
  std::string model_type_, hf_class_, task_class_;
  RemoteCode code_;
};

}  // namespace

const ModelFamily& family() {
  static const RobertaFamily instance("roberta", "RobertaModel", "Roberta");
  return instance;
}

const ModelFamily& xlm_family() {
  static const RobertaFamily instance("xlm-roberta", "XLMRobertaModel", "XLMRoberta");
  return instance;
}

}  // namespace headprune::models::roberta
