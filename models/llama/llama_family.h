// The LLaMA family (HF `model_type` "llama": LlamaForCausalLM, llama2.c checkpoints converted),
// with grouped-query attention and per-layer sets of query heads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "models/model_family.h"
#include "models/remote_code.h"

namespace headprune::models::llama {

/// How transformers' own class of a LLaMA-style family sizes its heads, which decides whether
/// it builds a uniform export (the same heads per KV group in every layer, at least one).
enum class NativeHeadDim {
  /// LLaMA: 4.x reads the explicit head_dim; 5.x's config also needs the query-head count to
  /// divide hidden_size.
  kDividesHiddenIn5,
  /// Qwen2, Phi-3: 5.x reads head_dim; 4.x takes hidden_size / num_attention_heads, so the
  /// kept heads must fill hidden_size there.
  kFillsHiddenIn4,
  /// Qwen3, Mistral: every version with the class reads head_dim.
  kExplicit,
};

/// HF LlamaConfig / LlamaForCausalLM: `num_attention_heads` query heads share
/// `num_key_value_heads` KV heads, SwiGLU feed-forward, an LM head; transformers cannot prune its
/// heads, so per-layer head sets a plain config cannot express are kept in
/// `headprune.kept_heads` (docs/formats.md). The base of every family LlamaModel computes
/// (models/qwen2/): such a family parses its own keys after parse_llama_fields and overrides
/// what it exports and says differently.
class LlamaFamily : public ModelFamily {
 public:
  /// `stem` names the HF classes ("Llama": LlamaForCausalLM; headprune's remote code
  /// HeadpruneLlamaConfig / HeadpruneLlamaForCausalLM); `display_name` is the family in
  /// messages ("LLaMA"); `head_dim_rule` how its HF class sizes heads.
  LlamaFamily(std::string stem = "Llama", std::string display_name = "LLaMA",
              NativeHeadDim head_dim_rule = NativeHeadDim::kDividesHiddenIn5);
  std::string model_type() const override;
  std::string description(const ModelConfig& c) const override;
  const std::set<std::string>& modelled_keys() const override;
  std::string default_hidden_act() const override { return "silu"; }
  int64_t default_max_position_embeddings() const override { return 2048; }
  void parse_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override;
  void parse_head_sets(const nlohmann::json& j, const std::string& source, ModelConfig& c) const override;
  /// Never `pruned_heads`. Uniform groups: a standard HF config with the kept counts (heads
  /// renumbered 0..n-1, the original numbers in headprune.original_head_ids); otherwise the
  /// original counts plus `headprune.kept_heads`. Always an explicit head_dim.
  nlohmann::json to_json(const ModelConfig& c) const override;
  bool has_qkv_bias(const ModelConfig& c) const override;
  bool has_output_bias(const ModelConfig& c) const override;
  bool has_ffn_bias(const ModelConfig& c) const override;
  int64_t ffn_matrices() const override { return 3; }
  bool has_lm_head() const override { return true; }
  std::string empty_layer_warning(int64_t layer) const override;
  std::optional<std::string> layout_warning(const ModelConfig& c) const override;
  std::string export_note(const ModelConfig& c) const override;
  /// models/llama/modeling_headprune_llama.py: the HF class with per-layer query/KV head
  /// counts (headprune.kept_heads) and its config with an explicit head_dim; auto_map names
  /// Headprune<stem>Config / Headprune<stem>ForCausalLM.
  const RemoteCode* remote_code() const override { return &remote_code_; }
  /// hf_class() (ModernBERT, an encoder built on this family: its classification layout's).
  std::optional<std::string> head_class(const ModelConfig& c) const override {
    return ModelFamily::head_class(c).value_or(hf_class());
  }
  /// BPE: byte-level, or SentencePiece-style with byte fallback (LLaMA 2, Mistral, Phi-3, Gemma).
  std::vector<std::string> tokenizer_models(const ModelConfig&) const override { return {"BPE"}; }
  /// !loads_natively(c).
  bool needs_remote_code(const ModelConfig& c) const override;

 protected:
  /// The family's name in messages ("LLaMA").
  const std::string& display_name() const { return display_name_; }
  /// Its HF class ("LlamaForCausalLM").
  std::string hf_class() const { return stem_ + "ForCausalLM"; }
  /// Whether transformers' own class builds the export of `c` in every version that has the
  /// class (native_readers): the same heads per KV group in every layer, at least one, and
  /// what the NativeHeadDim rule asks of their count.
  bool loads_natively(const ModelConfig& c) const;
  /// Who loads a uniform export that is not loads_natively ("transformers 4.x").
  std::string partial_native_reader() const;
  /// Who loads a loads_natively export ("transformers 4.x and 5.x").
  std::string native_readers() const;
  /// The transformers 4 releases that have the family's class ("4.x"; Gemma 3: "4.50+").
  virtual std::string v4_versions() const { return "4.x"; }
  /// "AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True) loads it ...", naming
  /// remote_code()'s class.
  std::string remote_code_route() const;

 private:
  std::string stem_, display_name_;
  NativeHeadDim head_dim_rule_;
  RemoteCode remote_code_;
};

/// Reads the keys of HF LlamaConfig into `c` (after the common ones): rms_norm_eps, rope_theta
/// and plain RoPE in rope_scaling / rope_parameters (anything else refused), tied embeddings,
/// attention_bias, mlp_bias, bos/eos ids; checks the activation (silu or gelu_pytorch_tanh), GQA
/// divisibility and an even head_dim.
/// @throws headprune::Error naming `source` and the key.
void parse_llama_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c);

/// One `rope_scaling` / `rope_parameters` object (`where` names it) into `c`: plain RoPE
/// (plain_rope_theta) or Llama 3's scaling (rope_type "llama3": factor, low_freq_factor,
/// high_freq_factor, original_max_position_embeddings, optional rope_theta; ModelConfig::rope_scaling).
/// @throws headprune::Error naming `source`: another rope_type, an unknown or missing key, or
///         llama3 values outside factor >= 1, high_freq_factor > low_freq_factor > 0, L > 0.
void parse_rope(const nlohmann::json& rope, const std::string& where, const std::string& source, ModelConfig& c);

/// The rope_theta of one plain-RoPE object (`rope_scaling` / `rope_parameters`, or one layer
/// type's entry of Gemma 3's nested `rope_parameters`), else `fallback`; `where` names it in
/// messages, `absent_type` is the rope_type assumed when the object has none ("" refuses that).
/// @throws headprune::Error naming `source`: another rope_type, or a key other than rope_type /
///         rope_theta.
double plain_rope_theta(const nlohmann::json& rope, const std::string& where, const std::string& absent_type,
                        double fallback, const std::string& source);

/// The base of one layer type ("full_attention", "sliding_attention") in transformers 5's nested
/// `rope_parameters` ({"full_attention": {...}, "sliding_attention": {...}}: Gemma 3, ModernBERT),
/// else `fallback`. Only plain RoPE is implemented.
/// @throws headprune::Error naming `source` and the entry.
double nested_rope_theta(const nlohmann::json& j, const std::string& layer_type, double fallback,
                         const std::string& source);

/// Reads `layer_types` (one "sliding_attention" or "full_attention" per layer) into
/// c.sliding_layers; false when the config has none. `family` names the family in messages.
/// @throws headprune::Error naming `source` for a list of the wrong length or another type.
bool read_layer_types(const nlohmann::json& j, const std::string& source, const std::string& family,
                      ModelConfig& c);

/// c.sliding_layers as config.json's `layer_types` ("sliding_attention" / "full_attention" per layer).
nlohmann::json layer_types_json(const ModelConfig& c);

/// Reads `sliding_window` as HF MistralConfig / Phi3Config do: absent -> `absent_default` (4096
/// for Mistral, none for Phi-3), null -> none, else a positive integer applied to every layer
/// (ModelConfig::sliding_window / sliding_layers).
/// @throws headprune::Error naming `source` and the key.
void parse_sliding_window(const nlohmann::json& j, const std::string& source, int64_t absent_default,
                          ModelConfig& c);

/// "a sliding window of N positions" or "full causal attention", for descriptions of families
/// whose every layer attends alike.
std::string attention_span(const ModelConfig& c);

/// The family's config rules, costs and export notes (llama_family.cpp).
const ModelFamily& family();

/// A LlamaModel for `config` (random weights). Defined in llama_model.cpp.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names);

/// The family's llama.cpp GGUF mapping (architectures `llama` and, written for uneven heads,
/// `deci`). Defined in llama_gguf_codec.cpp.
const GgufCodec& gguf_codec();

}  // namespace headprune::models::llama
