// One model family (an HF `model_type`): everything architecture-specific except the forward
// pass itself, which lives in the family's model class (models/<family>/<family>_model.h).
// LibTorch-free, so that config.json parsing is fuzzed on its own (tests/fuzz).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/classification_layout.h"

namespace headprune::models {

struct ModelConfig;
struct RemoteCode;
class AttentionModel;
class GgufCodec;

/// What the rest of headprune asks about an architecture instead of branching on `model_type`.
/// Implementations: models/bert/bert_family.cpp, models/llama/llama_family.cpp; the registry
/// (models/registry.h) maps `model_type` to them. docs/design.md has the checklist for adding one.
class ModelFamily {
 public:
  virtual ~ModelFamily() = default;

  /// The HF `model_type` this family implements ("bert", "llama").
  virtual std::string model_type() const = 0;

  /// One line for `inspect`: the HF class it mirrors and how its heads are laid out.
  virtual std::string description(const ModelConfig& config) const = 0;

  // --- config.json (HF PretrainedConfig subclass of the family) ---

  /// HF `PretrainedConfig.attribute_map` for the common keys this family's config.json spells
  /// its own way: canonical name (hidden_size, ...) -> the file's key (DistilBERT: dim, ...).
  /// from_json reads the file's key under the canonical name; the file keys belong in
  /// modelled_keys(). Default: none.
  virtual const std::map<std::string, std::string>& attribute_map() const;
  /// Keys beyond models/config_keys.cpp's common ones that this family reads.
  virtual const std::set<std::string>& modelled_keys() const = 0;
  /// HF defaults that differ per family, for absent keys.
  virtual std::string default_hidden_act() const = 0;
  virtual int64_t default_max_position_embeddings() const = 0;
  /// head_dim when config.json has none; empty: hidden_size / num_attention_heads (HF's rule
  /// for most families; Qwen3's default is 128).
  virtual std::optional<int64_t> default_head_dim() const { return {}; }
  /// Reads and checks the family's own fields, after the common ones are parsed.
  /// @throws headprune::Error naming `source` and the key.
  virtual void parse_fields(const nlohmann::json& j, const std::string& source,
                            ModelConfig& config) const = 0;
  /// Reads per-layer head sets beyond HF `pruned_heads` (after kept_heads is the full set).
  /// @throws headprune::Error naming `source`.
  virtual void parse_head_sets(const nlohmann::json& j, const std::string& source,
                               ModelConfig& config) const;
  /// The config.json to write next to pruned weights (ModelConfig::to_json documents both).
  virtual nlohmann::json to_json(const ModelConfig& config) const = 0;

  // --- per-head costs (models/head_costs.h, models/flops.h) ---

  /// Whether the query/key/value projections carry biases (sliced with their heads).
  virtual bool has_qkv_bias(const ModelConfig& config) const = 0;
  /// Whether the attention output projection carries a bias (kept whatever heads remain).
  virtual bool has_output_bias(const ModelConfig& config) const = 0;
  /// Whether the FFN's projections carry biases (each removed neuron takes its input rows' biases).
  virtual bool has_ffn_bias(const ModelConfig& config) const = 0;
  /// Weight matrices of H×I in one feed-forward block (2: up/down; 3: SwiGLU gate/up/down).
  virtual int64_t ffn_matrices() const = 0;
  /// Whether the model ends in a language-model head over the vocabulary (can generate).
  virtual bool has_lm_head() const = 0;
  /// The family's `*ForSequenceClassification` layout for `config` (models/classification_layout.h),
  /// or empty when headprune reads no classifier head for it (decoders). Default: empty.
  virtual std::optional<ClassificationLayout> classification_layout(const ModelConfig&) const { return std::nullopt; }
  /// The HF class of a checkpoint whose head on top of the base model this family reads
  /// exactly: an encoder's classification_layout architecture, a decoder's `<Family>ForCausalLM`.
  /// A checkpoint with a head whose config.json `architectures` names another class (a token
  /// classifier, a question-answering or masked-LM head) is refused by name. Default: the
  /// classification layout's, or none.
  virtual std::optional<std::string> head_class(const ModelConfig& config) const;
  /// The tokenizer.json `model.type`s this family's checkpoints use ("WordPiece", "BPE",
  /// "Unigram"); a tokenizer.json of another type (or none) is refused with this list.
  virtual std::vector<std::string> tokenizer_models(const ModelConfig& config) const = 0;

  // --- export (pruner/surgery/export.cpp asks these) ---

  /// Warning for a layer left with no heads.
  virtual std::string empty_layer_warning(int64_t layer) const = 0;
  /// Warning when the kept heads need a reader other than the family's HF class, if any.
  virtual std::optional<std::string> layout_warning(const ModelConfig& config) const;
  /// The `headprune.note` of an exported config: who can load it and how.
  virtual std::string export_note(const ModelConfig& config) const = 0;
  /// Modelling code written into every export of this family and registered in config.json's
  /// `auto_map` (models/remote_code.h), or nullptr. A config whose `auto_map` registers only
  /// this one's classes, as it does (all, or fewer as an earlier headprune wrote), is headprune's
  /// own export and loads; any other `auto_map` is refused (custom code).
  virtual const RemoteCode* remote_code() const { return nullptr; }
  /// Whether an export of `config` carries remote_code(): the family's own HF class cannot
  /// build it in some reader people use. Default: whenever the family has remote code.
  virtual bool needs_remote_code(const ModelConfig& config) const;
};

/// Builds a model with random weights shaped by `config`'s kept heads; `weight_names` are the
/// checkpoint's tensor names (optional modules such as BERT's pooler are made when present).
using ModelFactory = std::shared_ptr<AttentionModel> (*)(const ModelConfig& config,
                                                         const std::set<std::string>& weight_names);

}  // namespace headprune::models
