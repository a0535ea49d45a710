// LLaMA-architecture decoder (HF LlamaForCausalLM) with grouped-query attention and per-layer
// sets of query heads; also the model of the families that compute as LLaMA does with options
// (models/llama/llama_family.h, LlamaFamily): Qwen2's q/k/v biases, Qwen3's q/k norms, Mistral's
// and Phi-3's sliding windows, Phi-3's fused file layout (split on load), Gemma 3's (1 + w)
// sandwich norms, GeGLU, scaled embeddings, query_pre_attn_scalar and per-layer windows / RoPE
// bases; ModernBERT's bidirectional attention, LayerNorms, embedding norm, bare first layer and
// missing LM head (models/modernbert/, which also maps its file names) — each a ModelConfig field,
// none a branch on the family.
//
// Module tree mirrors HF transformers `modeling_llama.py`, so named_parameters() are exactly the
// checkpoint keys:
//   model.embed_tokens                                   [vocab, H]
//   model.layers.N.input_layernorm, post_attention_layernorm   RMSNorm weight [H]
//   model.layers.N.pre_feedforward_layernorm, post_feedforward_layernorm  [H] (Gemma's sandwich_norms)
//   model.layers.N.self_attn.q_proj   [q_heads*head_dim, H]     (q/k/v biases if the family's
//   model.layers.N.self_attn.{k,v}_proj [kv_heads*head_dim, H]   has_qkv_bias: attention_bias
//   model.layers.N.self_attn.o_proj   [H, q_heads*head_dim]     or Qwen2; o_proj's: attention_bias)
//   model.layers.N.self_attn.{q,k}_norm [head_dim]              (Qwen3's qk_norm: shared by the heads)
//   model.layers.N.mlp.{gate,up}_proj [I, H], mlp.down_proj [H, I]  (biases only if mlp_bias)
//   model.norm                                            [H]
//   lm_head                                               [vocab, H] (absent if tie_word_embeddings)
//
// Query head i of a layer reads KV head kv_index[i] (local indices). A dense layer has
// kv_index[i] = i / (num_attention_heads / num_key_value_heads); after pruning, groups may be
// uneven, and a KV head stays exactly as long as one of its query heads does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>

#include "models/attention_model.h"
#include "models/linear.h"
#include "models/norm.h"

namespace headprune::models {

/// RoPE's inverse frequencies [head_dim / 2] float32 on the CPU: theta^(−2i/head_dim) (HF's
/// default rope type), then Llama 3's frequency scaling when `scaling.llama3` (RopeScaling).
torch::Tensor rope_inv_freq(int64_t head_dim, double theta, const RopeScaling& scaling);

/// Rotary position embedding in HF's rotate_half convention (the first and second halves of a
/// head's dimensions form the rotated pairs): cos/sin tables for positions, from rope_inv_freq.
/// @returns {cos, sin}, each [T, head_dim] float32, for positions 0..T-1 on `device`.
std::pair<torch::Tensor, torch::Tensor> rotary_tables(int64_t seq_len, int64_t head_dim, double theta,
                                                      const RopeScaling& scaling, const torch::Device& device);

/// Self-attention of one layer with any set of query heads and the KV heads they use.
class LlamaAttentionImpl : public torch::nn::Module {
 public:
  /// `kv_of_query[i]`: local KV index of local query head i (values in 0..num_kv_heads-1, every
  /// KV head used at least once).
  LlamaAttentionImpl(const ModelConfig& config, std::vector<int64_t> kv_of_query,
                     int64_t num_kv_heads);
  /// x: [B, T, H]; mask_bias: [B, 1, T, past + T] additive (undefined: every key visible);
  /// cos/sin: [T, head_dim] for the positions of x; multiplier: undefined or [num_heads].
  /// With `past_keys`/`past_values` (a KV cache layer, [B, num_kv_heads, past, head_dim] or
  /// undefined) x's keys and values are appended to them first.
  /// @returns o_proj(concatenated per-head context × multiplier): [B, T, H].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                        const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& multiplier, torch::Tensor* past_keys = nullptr,
                        torch::Tensor* past_values = nullptr);
  int64_t num_heads;     ///< query heads present
  int64_t num_kv_heads;  ///< KV heads present
  int64_t head_dim;
  std::vector<int64_t> kv_of_query;  ///< local query head -> local KV head
  bool record_probs = false;  ///< keep the last forward's probabilities in `probs`
  torch::Tensor probs;        ///< [B, num_heads, T, T], detached, when record_probs
  double query_scale = 1.0;  ///< queries times sqrt(head_dim / query_pre_attn_scalar) (Gemma), after RoPE
  bool record_context = false;  ///< keep the last forward's o_proj input in `context`
  torch::Tensor context;        ///< [B, T, num_heads*head_dim], detached, when record_context
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  /// "q_norm" / "k_norm" [head_dim] when config.qk_norm (Qwen3), else empty.
  Norm q_norm{nullptr}, k_norm{nullptr};
};
TORCH_MODULE(LlamaAttention);

/// HF `LlamaMLP`: down_proj(act(gate_proj(x)) * up_proj(x)), act = config.hidden_act (silu:
/// SwiGLU; gelu_pytorch_tanh: Gemma's GeGLU; gelu: ModernBERT's GeGLU, `act(input) * gate` of Wi's halves).
class LlamaMLPImpl : public torch::nn::Module {
 public:
  /// `intermediate_size`: the FFN width of this layer (ModelConfig::intermediate_sizes).
  LlamaMLPImpl(const ModelConfig& config, int64_t intermediate_size);
  /// x: [B, T, H]; multiplier: undefined or [width], on act(gate_proj(x)) * up_proj(x) (the
  /// down_proj input: AttentionModel's FfnMultipliers). @returns [B, T, H].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& multiplier = {});
  bool record_activation = false;  ///< keep the last forward's down_proj input in `activation`
  torch::Tensor activation;        ///< [B, T, width], detached, when record_activation
  Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  std::string hidden_act_;  ///< silu, gelu (erf) or gelu_pytorch_tanh
};
TORCH_MODULE(LlamaMLP);

/// HF `LlamaDecoderLayer`: pre-norm attention and MLP blocks with residuals. With
/// config.sandwich_norms, HF `Gemma3DecoderLayer`: x + post_attention_layernorm(attn(input_layernorm(x))),
/// then h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h))).
class LlamaDecoderLayerImpl : public torch::nn::Module {
 public:
  /// `input_norm` false: no input_layernorm, the block reads x itself (ModernBERT's layer 0).
  LlamaDecoderLayerImpl(const ModelConfig& config, std::vector<int64_t> kv_of_query,
                        int64_t num_kv_heads, int64_t intermediate_size, bool input_norm = true);
  /// As LlamaAttentionImpl::forward (the KV cache layer passed through); `ffn_multiplier` as
  /// LlamaMLPImpl::forward's.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                        const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& multiplier, const torch::Tensor& ffn_multiplier,
                        torch::Tensor* past_keys = nullptr, torch::Tensor* past_values = nullptr);
  /// Keeps the last forward's block input and context in `io` (sets self_attn's record_context).
  void set_record_io(bool on);
  AttentionBlockIO io;      ///< detached, when recording
  AttentionBlockIO ffn_io;  ///< the MLP's residual and down_proj input, when recording (not with sandwich norms)
  Norm input_layernorm{nullptr};  ///< empty in ModernBERT's layer 0
  Norm post_attention_layernorm{nullptr};
  Norm pre_feedforward_layernorm{nullptr}, post_feedforward_layernorm{nullptr};  ///< sandwich_norms only
  LlamaAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

/// Local KV index of each kept query head of a layer, from original indices: kept query head h
/// uses original KV head h / group, numbered among `kept_kv` (ascending original KV indices).
std::vector<int64_t> local_kv_of_query(const std::vector<int64_t>& kept_heads,
                                       const std::vector<int64_t>& kept_kv, int64_t group);

/// HF `LlamaForCausalLM`: decoder + LM head. forward() fills last_hidden_state (after the final
/// norm) and logits [B, T, vocab]. Positions are 0..T-1 in every row (HF's default when no
/// position_ids are given), so pad on the right.
class LlamaModel : public AttentionModel {
 public:
  /// Builds with random weights, shaped by config.kept_heads (and the KV heads they use).
  /// @throws headprune::Error if the config's family is not a llama::LlamaFamily.
  explicit LlamaModel(ModelConfig config);

  const ModelConfig& config() const override { return config_; }
  /// Causal (config.bidirectional: bidirectional) attention plus the padding mask (attention_mask
  /// 0 = pad; undefined = all real). logits are undefined for a family without an LM head.
  /// @throws headprune::Error on bad input shapes or a multiplier of the wrong shape.
  ModelOutput forward(const ModelInputs& inputs, const Multipliers& multipliers) override;
  using AttentionModel::forward;
  /// Removes query heads (local indices): their q_proj rows and o_proj columns; KV heads left
  /// without query heads lose their k_proj/v_proj rows. `scale` [current heads] is folded into
  /// o_proj columns first. Updates config().kept_heads.
  /// @throws headprune::Error on an out-of-range or duplicate index or a bad scale shape.
  void prune_heads(int64_t layer, const std::vector<int64_t>& remove_local,
                   const torch::Tensor& scale) override;
  void prune_ffn(int64_t layer, const std::vector<int64_t>& remove_local, const torch::Tensor& scale) override;
  /// Phi-3 (config().fused_projections): qkv_proj / gate_up_proj split into the q/k/v and
  /// gate/up projections this model holds (models/llama/fused_projections.h); else the identity.
  TensorMap weights_from_file(TensorMap weights, const std::string& source) const override;
  /// Phi-3: fused back as its files hold them; else the identity.
  TensorMap weights_to_file(TensorMap weights) const override;
  /// The decoder with a KV cache (AttentionModel::forward_cached): positions cache.length.. of
  /// the rotary tables, causal among the new tokens, every cached key visible.
  torch::Tensor forward_cached(const torch::Tensor& input_ids, KvCache& cache) override;
  void drop_layers(const std::vector<int64_t>& layers) override;
  std::vector<torch::Tensor> layer_parameters(int64_t layer) const override;
  int64_t attention_parameter_count() const override;
  /// HF LlamaForCausalLM as ONNX without a KV cache (models/llama/llama_onnx.cpp): inputs
  /// input_ids and attention_mask, outputs last_hidden_state (after the final norm) and logits.
  OnnxModelOutputs add_to_onnx(OnnxGraph& graph) const override;
  void set_output_attentions(bool on) override;
  void set_record_attention_io(bool on) override;
  Linear output_projection(int64_t layer) const override;
  Linear ffn_output_projection(int64_t layer) const override;
  QueryKeyWeights query_key_weights(int64_t layer) const override;
  /// lm_head.weight, or embed_tokens.weight when tied; undefined without an LM head (ModernBERT).
  /// In the file's dtype when the checkpoint loaded with WeightStorage::source.
  torch::Tensor lm_head_weight() const override;
  /// Every Linear's and the token embedding's weight: forward widens them per use.
  std::set<std::string> narrow_storage_weights() const override;

  torch::nn::Embedding embed_tokens{nullptr};  ///< "model.embed_tokens"
  Norm embed_norm{nullptr};                     ///< "model.embed_norm" when config.embedding_norm (ModernBERT)
  std::vector<LlamaDecoderLayer> layers;        ///< "model.layers.N"
  Norm norm{nullptr};                        ///< "model.norm"
  Linear lm_head{nullptr};                      ///< "lm_head", null when tied or the family has none

 private:
  /// The token embeddings of `ids` [B, T] -> [B, T, H] in compute_dtype(), times
  /// config.embed_scale (Gemma).
  torch::Tensor embed(const torch::Tensor& ids);
  /// The dtype the model computes in: its norms' (never kept narrow), float32 unless the whole
  /// model was cast (cast_checkpoint).
  torch::ScalarType compute_dtype() const { return norm->weight.scalar_type(); }
  /// Whether forward runs layer `layer` with `multipliers` checkpointed (checkpoint_layers(), a
  /// pass that needs gradients, multipliers given, the layer's weights frozen).
  bool checkpointed(int64_t layer, const torch::Tensor& multipliers) const;
  /// Layer `layer` run checkpointed (models/layer_checkpoint.h) with head multipliers `m` and FFN
  /// multipliers `f` (either may be undefined, not both), packed into one tensor for it.
  torch::Tensor checkpointed_forward(int64_t layer, const torch::Tensor& x, const torch::Tensor& bias,
                                     const torch::Tensor& cos, const torch::Tensor& sin, const torch::Tensor& m,
                                     const torch::Tensor& f);
  /// The LM head (tied or not) on the final norm's output: [B, T, H] -> logits [B, T, vocab];
  /// undefined for a family without one (ModernBERT).
  torch::Tensor lm_logits(const torch::Tensor& normed) const;

  ModelConfig config_;
};

}  // namespace headprune::models
