#include "models/modernbert/modernbert_family.h"

#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/llama/llama_family.h"
#include "models/remote_code.h"

namespace headprune::generated {
/// models/modernbert/modeling_headprune_modernbert.py, embedded by CMakeLists.txt.
extern const char* const kModelingHeadpruneModernbertPy;
extern const char* const kModelingHeadpruneBertPy;
}  // namespace headprune::generated

namespace headprune::models::modernbert {
namespace {

/// RoPE: rope_parameters' full_attention / sliding_attention entries (transformers 5), else
/// global_rope_theta (160,000) and local_rope_theta (10,000) as the Hub's configs write them;
/// plain RoPE only.
void parse_rope(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null())
    throw Error(fmt::format("{}: rope_scaling {} is not supported (only plain RoPE)", source, j.at("rope_scaling").dump()));
  if (j.contains("rope_parameters") && !j.at("rope_parameters").is_null()) {
    if (!j.at("rope_parameters").is_object())
      throw Error(fmt::format("{}: rope_parameters must be an object", source));
    for (const auto& [name, value] : j.at("rope_parameters").items())
      if (name != "full_attention" && name != "sliding_attention")
        throw Error(fmt::format("{}: rope_parameters.{} is not supported (ModernBERT takes full_attention and "
                                "sliding_attention)", source, name));
  }
  c.rope_theta = llama::nested_rope_theta(j, "full_attention", json_optional<double>(j, "global_rope_theta", 160000.0, source),
                                          source);
  c.rope_local_theta = llama::nested_rope_theta(
      j, "sliding_attention", json_optional<double>(j, "local_rope_theta", 10000.0, source), source);
  if (c.rope_theta <= 0 || c.rope_local_theta <= 0)
    throw Error(fmt::format("{}: RoPE bases must be positive", source));
}

/// Which layers are local: `layer_types` (transformers 5), else every layer whose index is not a
/// multiple of global_attn_every_n_layers (3); both present must agree. The window is
/// local_attention (128) positions in all, half on each side.
void parse_layers(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  c.sliding_window = json_optional<int64_t>(j, "local_attention", 128, source);
  if (c.sliding_window < 2)
    throw Error(fmt::format("{}: local_attention must be at least 2 positions, got {}", source, c.sliding_window));
  const auto every = json_optional<int64_t>(j, "global_attn_every_n_layers", 3, source);
  if (every <= 0) throw Error(fmt::format("{}: global_attn_every_n_layers must be positive", source));
  std::vector<bool> from_every;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) from_every.push_back(l % every != 0);
  if (!llama::read_layer_types(j, source, "ModernBERT", c)) {
    c.sliding_layers = from_every;
  } else if (j.contains("global_attn_every_n_layers") && c.sliding_layers != from_every) {
    throw Error(fmt::format("{}: layer_types and global_attn_every_n_layers {} name different local layers; "
                            "transformers 5 reads layer_types, 4.x global_attn_every_n_layers (remove one)",
                            source, every));
  }
}

/// The classifier_activation values the classifier head computes (HF ACT2FN names).
const std::set<std::string> kClassifierActivations = {"gelu", "gelu_new", "gelu_pytorch_tanh", "silu", "relu", "tanh"};

/// ModernBertForSequenceClassification's head from the config's classifier keys: classifier_pooling
/// ("cls": the first token, "mean": over real tokens), then ModernBertPredictionHead (head.dense with
/// classifier_bias, classifier_activation, head.norm as the encoder's norms), then `classifier`.
/// @throws headprune::Error naming `source` for a pooling or activation the head does not compute.
ClassificationLayout head_layout(const nlohmann::json& j, const std::string& source, const ModelConfig& c) {
  ClassificationLayout layout{"ModernBertForSequenceClassification", "model.", "head.dense", false,
                              json_optional<std::string>(j, "classifier_activation", "gelu", source), "classifier"};
  layout.pooling = json_optional<std::string>(j, "classifier_pooling", "cls", source);
  if (layout.pooling != "cls" && layout.pooling != "mean")
    throw Error(fmt::format("{}: classifier_pooling '{}' is not supported (cls, mean)", source, layout.pooling));
  if (!kClassifierActivations.count(layout.activation))
    throw Error(fmt::format("{}: classifier_activation '{}' is not supported (gelu, gelu_new, gelu_pytorch_tanh, "
                            "silu, relu, tanh)",
                            source, layout.activation));
  layout.dense_bias = json_optional<bool>(j, "classifier_bias", false, source);
  layout.norm = "head.norm";
  layout.norm_eps = c.layer_norm_eps;
  layout.norm_bias = c.norm_bias;
  return layout;
}

/// HF ModernBertConfig (transformers 4.48+): see the folder's header.
class ModernBertFamily final : public llama::LlamaFamily {
 public:
  ModernBertFamily() : LlamaFamily("ModernBert", "ModernBERT", llama::NativeHeadDim::kExplicit) {}
  std::string model_type() const override { return "modernbert"; }

  std::string description(const ModelConfig& c) const override {
    int64_t local = 0;
    for (bool s : c.sliding_layers) local += s ? 1 : 0;
    return fmt::format("ModernBERT encoder (HF ModernBertModel): {} heads of {} per layer, rotary positions; {} of {} "
                       "layers attend within {} positions either side, the others globally",
                       c.num_attention_heads, c.head_dim, local, c.num_hidden_layers, c.sliding_window / 2);
  }

  const std::map<std::string, std::string>& attribute_map() const override {
    static const std::map<std::string, std::string> names = {{"hidden_act", "hidden_activation"}};
    return names;
  }
  const std::set<std::string>& modelled_keys() const override {
    static const std::set<std::string> keys = {
        "hidden_activation", "norm_eps", "norm_bias", "attention_bias", "mlp_bias", "global_rope_theta",
        "local_rope_theta", "rope_parameters", "rope_scaling", "layer_types", "global_attn_every_n_layers",
        "local_attention", "initializer_cutoff_factor", "embedding_dropout", "mlp_dropout", "decoder_bias",
        "classifier_pooling", "classifier_bias", "classifier_activation", "deterministic_flash_attn",
        "sparse_prediction", "sparse_pred_ignore_index", "reference_compile", "repad_logits_with_grad",
        "cls_token_id"};
    return keys;
  }
  std::string default_hidden_act() const override { return "gelu"; }
  int64_t default_max_position_embeddings() const override { return 8192; }

  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override {
    // ModernBertMLP: Wo(act(input) * gate) with ACT2FN[hidden_activation].
    if (c.hidden_act != "gelu" && c.hidden_act != "gelu_pytorch_tanh" && c.hidden_act != "silu")
      throw Error(fmt::format("{}: hidden_activation '{}' is not supported (gelu, gelu_pytorch_tanh, silu)", source,
                              c.hidden_act));
    if (c.head_dim * c.num_attention_heads != c.hidden_size || c.head_dim % 2 != 0)
      throw Error(fmt::format("{}: head_dim {} x num_attention_heads {} must be hidden_size {} with an even head_dim "
                              "(ModernBertAttention's heads fill hidden_size; rotary pairs)",
                              source, c.head_dim, c.num_attention_heads, c.hidden_size));
    for (const char* key : {"attention_bias", "mlp_bias"})
      if (json_optional<bool>(j, key, false, source))
        throw Error(fmt::format("{}: {} true is not supported (ModernBERT's checkpoints have no projection biases)",
                                source, key));
    c.layer_norm_eps = json_optional<double>(j, "norm_eps", 1e-5, source);
    c.norm_bias = json_optional<bool>(j, "norm_bias", false, source);
    parse_rope(j, source, c);
    parse_layers(j, source, c);
    head_layout(j, source, c);  // refuses classifier keys the head does not compute, at load
    c.bidirectional = true;
    c.layer_norm = true;
    c.embedding_norm = true;
    c.first_layer_input_norm = false;
  }

  /// LLaMA's without renumbering: the original head count with `headprune.kept_heads` whenever a
  /// head is gone (ModernBertAttention sizes heads by hidden_size / num_attention_heads), and
  /// `layer_types` written out (a dropped layer would shift global_attn_every_n_layers' pattern).
  nlohmann::json to_json(const ModelConfig& c) const override {
    auto j = c.raw;
    for (const char* key : {"pruned_heads", "auto_map", "global_attn_every_n_layers"}) j.erase(key);
    j["head_dim"] = c.head_dim;
    if (j.contains("headprune") && j["headprune"].is_object()) j["headprune"].erase("kept_heads");
    if (c.total_heads() != c.num_hidden_layers * c.num_attention_heads) j["headprune"]["kept_heads"] = c.kept_heads;
    j["layer_types"] = llama::layer_types_json(c);
    return j;
  }
  bool has_lm_head() const override { return false; }
  /// ModernBertForSequenceClassification (head_layout; its keys were checked by parse_fields).
  std::optional<ClassificationLayout> classification_layout(const ModelConfig& c) const override {
    return head_layout(c.raw, "config.json", c);
  }

  std::string empty_layer_warning(int64_t layer) const override {
    return fmt::format("layer {} has no heads left: its attention adds nothing (Wo has no bias); headprune and "
                       "modeling_headprune_modernbert.py load this checkpoint",
                       layer);
  }
  std::optional<std::string> layout_warning(const ModelConfig&) const override { return {}; }
  std::string export_note(const ModelConfig&) const override {
    return "transformers' ModernBertModel sizes every layer's heads from hidden_size and 4.46 has no ModernBERT: "
           "AutoModel.from_pretrained(folder, trust_remote_code=True) loads this folder in transformers 4.46+ and 5.x "
           "(modeling_headprune_modernbert.py, registered in auto_map), as does sentence-transformers with "
           "trust_remote_code=True";
  }
  /// models/modernbert/modeling_headprune_modernbert.py: ModernBertConfig's keys and ModernBertModel (and its
  /// ForSequenceClassification) with per-layer head counts (headprune.kept_heads), for transformers 4.46
  /// (which has no ModernBERT) and 5.
  const RemoteCode* remote_code() const override {
    static const RemoteCode code{
        "modeling_headprune_modernbert.py", generated::kModelingHeadpruneModernbertPy,
        nlohmann::json{{"AutoConfig", "modeling_headprune_modernbert.HeadpruneModernBertConfig"},
                       {"AutoModel", "modeling_headprune_modernbert.HeadpruneModernBertModel"},
                       {"AutoModelForSequenceClassification",
                        "modeling_headprune_modernbert.HeadpruneModernBertForSequenceClassification"}},
        {{"modeling_headprune_bert.py", generated::kModelingHeadpruneBertPy}}};
    return &code;
  }
  bool needs_remote_code(const ModelConfig&) const override { return true; }
};

}  // namespace

const ModelFamily& family() {
  static const ModernBertFamily instance;
  return instance;
}

}  // namespace headprune::models::modernbert
