// The typed model configuration, parsed once from an HF `config.json`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headprune::models {

class ModelFamily;

/// RoPE frequency scaling of Llama 3.1 / 3.2 (HF rope_type "llama3", transformers'
/// _compute_llama3_parameters): with wavelength λ_i = 2π / inv_freq_i, L = original_max_position_embeddings,
/// frequencies with λ_i > L / low_freq_factor are divided by `factor`, those with λ_i <
/// L / high_freq_factor kept, and those between interpolated:
///   s = (L / λ_i − low_freq_factor) / (high_freq_factor − low_freq_factor),
///   inv_freq_i ← (1 − s) · inv_freq_i / factor + s · inv_freq_i.
/// Disabled (plain RoPE) when `llama3` is false.
struct RopeScaling {
  bool llama3 = false;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

/// HF `config.json`, with HF's defaults for absent optional keys.
///
/// Head counts: `num_attention_heads` is the count the architecture was trained with (the
/// *original* heads, indices 0..num_attention_heads-1). HF records removed heads in
/// `pruned_heads` (layer -> removed original indices, applied before weights load, see
/// transformers `PreTrainedModel.prune_heads`), so layer l keeps the original heads not listed
/// there, in ascending order; `kept_heads[l]` holds them.
///
/// LLaMA (`model_type` "llama", HF `LlamaConfig`): `num_attention_heads` query heads share
/// `num_key_value_heads` KV heads; original query head h uses original KV head
/// h / (num_attention_heads / num_key_value_heads). transformers' LLaMA cannot prune heads, so
/// per-layer head sets that a standard config cannot express are stored in headprune's
/// namespaced key `"headprune": {"kept_heads": [[original query heads] per layer]}` (see
/// docs/formats.md); a layer keeps exactly the KV heads that still serve a query head.
struct ModelConfig {
  std::string model_type;             ///< the family (models/registry.h): "bert" or "llama"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;            ///< model width H
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;    ///< original heads per layer
  int64_t num_key_value_heads = 0;    ///< equals num_attention_heads for BERT
  int64_t head_dim = 0;               ///< explicit `head_dim` or hidden_size / num_attention_heads
  /// The FFN width every layer was built with (HF `intermediate_size`; DistilBERT `hidden_dim`).
  int64_t intermediate_size = 0;
  /// Derived: per layer, the FFN neurons present (size num_hidden_layers): intermediate_size
  /// everywhere, unless FFN neurons were removed (prune_ffn). A layer of width 0 has lost its
  /// feed-forward block but for its output bias. Uneven widths are stored in headprune's
  /// namespaced key `"headprune": {"intermediate_sizes": [...]}` beside the original
  /// intermediate_size (docs/formats.md); uniform ones as a plain intermediate_size.
  std::vector<int64_t> intermediate_sizes;
  std::string hidden_act = "gelu";    ///< "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh", "relu", "silu"
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  int64_t pad_token_id = 0;
  double layer_norm_eps = 1e-12;
  /// RoBERTa-style positions (MPNet): token t's position id is padding_idx + the number of
  /// non-padding tokens up to and including t, and padding_idx for padding (HF
  /// create_position_ids_from_input_ids; MPNet's padding_idx is 1). -1: positions 0..T-1.
  int64_t position_padding_idx = -1;
  /// MPNet's relative position bias: a table [relative_attention_num_buckets, heads] shared by
  /// every layer, indexed by the T5 bucket of key - query position (models/relative_position.h)
  /// and added to each head's scores. 0: none.
  int64_t relative_attention_num_buckets = 0;
  // LLaMA only (HF LlamaConfig names and defaults).
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;   ///< lm_head shares model.embed_tokens.weight
  bool attention_bias = false;        ///< q/k/v/o_proj have biases
  bool qkv_bias = false;              ///< q/k/v_proj have biases, o_proj not (Qwen2)
  /// Each query and key head is RMS-normalised over head_dim before RoPE, by one weight [head_dim]
  /// shared by a layer's heads (Qwen3: self_attn.q_norm / self_attn.k_norm).
  bool qk_norm = false;
  bool mlp_bias = false;              ///< gate/up/down_proj have biases
  /// Sliding-window attention (Mistral, Phi-3): in a layer with sliding_layers[l], the query at
  /// position i sees the keys at positions j with i - sliding_window < j <= i (HF
  /// masking_utils.sliding_window_overlay: kv_idx > q_idx - sliding_window). 0: every layer
  /// sees every earlier position.
  int64_t sliding_window = 0;
  /// Per layer, whether it attends through the window (size num_hidden_layers when
  /// sliding_window > 0, else empty).
  std::vector<bool> sliding_layers;
  /// Gemma 3 (HF Gemma3TextConfig); the defaults compute as LLaMA.
  /// RMSNorm scales by (rms_norm_offset + weight), in float32 before the cast back: 1 for
  /// Gemma's `(1 + weight)` norms (every norm, q/k norms included), 0 for LLaMA's.
  double rms_norm_offset = 0.0;
  /// Gemma 2/3's four norms per layer: post_attention_layernorm on the attention output,
  /// pre_feedforward_layernorm / post_feedforward_layernorm around the MLP (LLaMA's
  /// post_attention_layernorm is the pre-MLP norm).
  bool sandwich_norms = false;
  /// Token embeddings are multiplied by it (Gemma: sqrt(hidden_size), in float32).
  double embed_scale = 1.0;
  /// Attention scores scale by query_pre_attn_scalar^-1/2 instead of head_dim^-1/2 (Gemma); 0:
  /// head_dim.
  double query_pre_attn_scalar = 0.0;
  /// RoPE base of the sliding-window layers (Gemma 3's rope_local_base_freq); 0: rope_theta.
  double rope_local_theta = 0.0;
  /// Llama 3's RoPE frequency scaling (rope_scaling / rope_parameters with rope_type "llama3").
  RopeScaling rope_scaling;
  /// ModernBERT (HF ModernBertConfig); the defaults compute as LLaMA.
  /// Encoder attention: every query sees every key but padding; in a sliding layer the keys at
  /// most sliding_window / 2 positions away on either side (HF
  /// sliding_window_bidirectional_overlay with local_attention // 2). false: causal.
  bool bidirectional = false;
  /// Norms are torch's LayerNorm (eps layer_norm_eps; biases when norm_bias), not RMSNorm.
  bool layer_norm = false;
  bool norm_bias = false;
  /// A norm right after the token embeddings ("model.embed_norm"; ModernBERT's embeddings.norm).
  bool embedding_norm = false;
  /// false: layer 0 has no input_layernorm (ModernBERT's attn_norm is nn.Identity there).
  bool first_layer_input_norm = true;
  /// q/k/v projections stored as one `qkv_proj` and gate/up as one `gate_up_proj` in the
  /// family's files (Phi-3); the model holds them split (models/llama/fused_projections.h).
  bool fused_projections = false;
  int64_t bos_token_id = 1;
  int64_t eos_token_id = 2;
  /// HF `pruned_heads`: layer -> removed original head indices (sorted, unique).
  std::map<int64_t, std::vector<int64_t>> pruned_heads;
  /// Derived: per layer, the original indices of the heads present, ascending.
  std::vector<std::vector<int64_t>> kept_heads;
  /// Heads per layer of the model this one was first pruned from. Equals num_attention_heads
  /// unless a uniform LLaMA export renumbered its kept heads 0..n-1 (then it is read from
  /// `headprune.original_num_attention_heads`).
  int64_t original_num_attention_heads = 0;
  /// Per layer, for each head index of this config (0..num_attention_heads-1), its index in
  /// the model first pruned: the identity unless a uniform LLaMA export renumbered heads
  /// (`headprune.original_head_ids`). Used by reports, never by the computation.
  std::vector<std::vector<int64_t>> original_head_ids;
  /// The whole file as read, so that export keeps keys headprune does not model.
  nlohmann::json raw;
  /// The family `model_type` names (set by from_json; the registry's families live as long as
  /// the program).
  const ModelFamily* model_family = nullptr;

  /// `heads` (this config's indices in `layer`) as indices of the model first pruned.
  std::vector<int64_t> original_ids(int64_t layer, const std::vector<int64_t>& heads) const;

  /// The window layer `layer` attends through, or 0 for full causal attention.
  int64_t window_of(int64_t layer) const;
  /// The RoPE base of layer `layer`: rope_local_theta in a sliding-window layer when set
  /// (Gemma 3), else rope_theta.
  double rope_theta_of(int64_t layer) const;
  /// Whether some layer attends through a window shorter than max_position_embeddings (a
  /// window as long as the position table changes nothing).
  bool has_effective_sliding_window() const;

  /// The longest input in tokens the position table serves: max_position_embeddings, less the
  /// padding_idx + 1 rows RoBERTa-style positions (position_padding_idx >= 0) never use.
  int64_t usable_positions() const;
  /// Whether layer `layer` can be removed whole (remove_layers): not layer 0 where the first layer
  /// is built without an input norm (ModernBERT: the layer moved into its place would lose its own).
  bool droppable_layer(int64_t layer) const { return layer != 0 || first_layer_input_norm; }
  /// Heads present in each layer (size num_hidden_layers).
  std::vector<int64_t> heads_per_layer() const;
  /// Total heads present over all layers.
  int64_t total_heads() const;
  /// Layer `layer`'s FFN width: intermediate_sizes[layer], or intermediate_size for a config
  /// built without them.
  int64_t ffn_width(int64_t layer) const;
  /// Whether every layer has the same nonzero FFN width: what a plain intermediate_size expresses
  /// (readers build each layer's FFN from it).
  bool plain_ffn() const;
  /// Records that layer `layer`'s FFN has `width` neurons left.
  /// @throws headprune::Error for a layer out of range or a width outside 0..its current width.
  void set_ffn_width(int64_t layer, int64_t width);
  /// Query heads per KV head in the original layout (1 for BERT).
  int64_t kv_group_size() const;
  /// Per layer, the original KV-head indices still used by a kept query head, ascending
  /// (BERT: the same as kept_heads).
  std::vector<std::vector<int64_t>> kept_kv_heads() const;
  /// True when every layer keeps the same number of query heads, the same number of KV heads,
  /// and the same number of query heads in each kept KV group: what HF's LLaMA attention can
  /// hold with plain num_attention_heads / num_key_value_heads.
  bool uniform_groups() const;

  /// The family `model_type` names, set when the config was parsed (from_json).
  /// @throws std::logic_error for a config that was not parsed (no family).
  const ModelFamily& family() const;

  /// Parses a config object of `family` (the registry's read_config finds it: models/registry.h;
  /// a GGUF codec names its own). `source` names the file in error messages.
  /// @throws headprune::Error for a `model_type` other than the family's, a missing required key
  ///         (named), a wrong-typed value, hidden_size not divisible by num_attention_heads
  ///         (without an explicit head_dim), or `pruned_heads` naming a layer/head out of range.
  static ModelConfig from_json(const nlohmann::json& j, const ModelFamily& family, const std::string& source);

  /// The config to write next to pruned weights (ModelFamily::to_json). BERT: `raw` with
  /// `pruned_heads` replaced by the current one (string layer keys, as HF writes them).
  /// LLaMA: if uniform_groups(), a
  /// standard HF config with num_attention_heads, num_key_value_heads and head_dim set to the
  /// kept counts (the weights' heads are then renumbered 0..n-1, so no headprune.kept_heads);
  /// otherwise the original counts plus `headprune.kept_heads`. Never `pruned_heads` for LLaMA.
  nlohmann::json to_json() const;

  /// Records that `removed` (original indices) were removed from `layer`; updates
  /// pruned_heads and kept_heads. @throws headprune::Error if an index is not present.
  void remove_heads(int64_t layer, const std::vector<int64_t>& removed);

  /// Removes whole layers (indices of this config's layers, any order): the per-layer fields
  /// (and `layer_types` in `raw`) lose their entries, the later layers are renumbered down (pruned_heads' keys included) and
  /// num_hidden_layers (also in `raw`, which the export writes) shrinks, so the config describes
  /// the shallower model as HF would. Removing none is allowed; removing every layer is not.
  /// @throws headprune::Error on an out-of-range or repeated index, or all layers; the config
  ///         is unchanged then.
  void remove_layers(const std::vector<int64_t>& layers);
};

/// Reads a JSON file. @throws headprune::Error naming the file on I/O or parse failure.
nlohmann::json read_json_file(const std::filesystem::path& file);

}  // namespace headprune::models
