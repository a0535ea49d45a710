// The interface every architecture implements, and the seam between models and gates.
//
// Models know nothing about hard-concrete gates. Each attention layer accepts an optional
// per-head multiplier, applied to each head's context vector right before the output
// projection: exactly where physically removing the head acts, so a 0/1 multiplier and
// removal give the same output (tests/surgery_test.cpp shows it).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "models/config.h"
#include "models/formats/safetensors.h"
#include "models/kv_cache.h"
#include "models/linear.h"

namespace headprune::models {

/// One batch of token ids. Shapes [batch, seq], int64; attention_mask 1 = real token, 0 = pad.
/// token_type_ids may be undefined (all zeros).
struct ModelInputs {
  torch::Tensor input_ids;
  torch::Tensor attention_mask;
  torch::Tensor token_type_ids;
};

/// Per-layer head multipliers: element l is undefined (no multiplier) or a float tensor of
/// shape [heads present in layer l].
using HeadMultipliers = std::vector<torch::Tensor>;

/// Per-layer FFN multipliers: element l is undefined (no multiplier) or a float tensor of shape
/// [config().intermediate_sizes[l]], multiplying each intermediate neuron's activation right
/// before the FFN's output projection (BERT `output.dense`, DistilBERT `lin2`, LLaMA
/// `down_proj`): where prune_ffn acts, so a 0/1 multiplier and removal give the same output.
/// CoFi (Xia et al. 2022, §3.1) gates the intermediate dimensions there.
using FfnMultipliers = std::vector<torch::Tensor>;

/// What forward() scales; a null member scales nothing.
struct Multipliers {
  const HeadMultipliers* heads = nullptr;
  const FfnMultipliers* ffn = nullptr;
};

/// Layer `layer`'s entry of `list` (one entry per layer, checked against `layers`), undefined
/// when `list` is null or the entry is; `what` names the kind in errors.
/// @throws headprune::Error if the list is not one per layer or the entry is not [size].
torch::Tensor layer_multiplier(const std::vector<torch::Tensor>* list, int64_t layer, int64_t layers,
                               int64_t size, const char* what);

/// One layer's attention block as the last forward pass saw it (set_record_attention_io(true)).
/// Both families compute the block's contribution to the residual stream as
/// `residual + output_projection(context)` (BERT then applies its LayerNorm; LLaMA's residual
/// is taken before input_layernorm), which is what a refit of the output projection matches.
struct AttentionBlockIO {
  torch::Tensor residual;  ///< [batch, seq, hidden_size]: the residual stream entering the block
  torch::Tensor context;   ///< [batch, seq, heads present × head_dim]: each head's context × its
                           ///< multiplier, concatenated — the output projection's input
};

/// What a forward pass produces.
struct ModelOutput {
  torch::Tensor last_hidden_state;  ///< [batch, seq, hidden_size]
  torch::Tensor logits;             ///< [batch, seq, vocab] for models with an LM head, else undefined
  /// With set_output_attentions(true): per layer the attention probabilities [batch,
  /// heads present in the layer, query, key] (softmax over keys; detached), as HF's
  /// `output_attentions`. Empty otherwise.
  std::vector<torch::Tensor> attentions;
  /// With set_record_attention_io(true): per layer its attention block's input and context
  /// (detached). Empty otherwise.
  std::vector<AttentionBlockIO> attention_io;
  /// With set_output_hidden_states(true): per layer its output [batch, seq, hidden_size], the
  /// residual stream after the layer (with its gradient; HF's `output_hidden_states` less the
  /// embeddings' entry, and for pre-norm decoders before the final norm). Empty otherwise.
  std::vector<torch::Tensor> hidden_states;
  /// With set_record_attention_io(true) as well: per layer its FFN block in the same form —
  /// `residual` the stream the FFN output is added to, `context` the FFN activation × its
  /// multiplier [batch, seq, FFN width], the FFN output projection's input (detached; not
  /// recorded for Gemma's sandwich norms, whose FFN output is normalised before it is added).
  std::vector<AttentionBlockIO> ffn_io;
};

/// Query/key weights of one layer's heads, for the score matrix X·W_Q,h·W_K,hᵀ·Xᵀ.
struct QueryKeyWeights {
  torch::Tensor query;  ///< [heads present, head_dim, hidden_size]: W_Q,h (rows of head h)
  torch::Tensor key;    ///< [heads present, head_dim, hidden_size]: the key weight head h reads
};

class OnnxGraph;

/// Value names of what a model's ONNX graph computes (models/formats/onnx_graph.h).
struct OnnxModelOutputs {
  std::string last_hidden_state;  ///< [batch, seq, hidden_size]
  std::string logits;             ///< [batch, seq, vocab] for models with an LM head, else empty
};

/// A transformer whose attention heads can be gated and removed.
class AttentionModel : public torch::nn::Module {
 public:
  ~AttentionModel() override = default;

  /// The configuration; its kept_heads always describe the weights currently held.
  virtual const ModelConfig& config() const = 0;

  /// Runs the model, scaling heads and FFN neurons by `multipliers` (each one entry per layer).
  /// @throws headprune::Error if a multiplier's shape does not match its layer's heads or FFN width.
  virtual ModelOutput forward(const ModelInputs& inputs, const Multipliers& multipliers) = 0;
  /// Runs the model with head multipliers only (optional, one entry per layer).
  ModelOutput forward(const ModelInputs& inputs, const HeadMultipliers* multipliers) {
    return forward(inputs, Multipliers{multipliers, nullptr});
  }

  /// Runs `input_ids` [batch, t] as the t positions after the `cache.length` ones `cache` holds
  /// (an empty cache: from position 0), appends their keys and values to `cache`, and returns
  /// the logits [batch, t, vocab]: what forward() gives for those positions of the whole
  /// sequence, without recomputing the earlier ones. No padding, no multipliers.
  /// @throws headprune::Error for a family without a cached decoder (BERT) or a sequence past
  ///         max_position_embeddings.
  virtual torch::Tensor forward_cached(const torch::Tensor& input_ids, KvCache& cache);

  /// The checkpoint file's tensors (HF names) as this model's parameters are named and shaped:
  /// the identity, except for families that store projections fused (Phi-3's qkv_proj and
  /// gate_up_proj, split here). Called before the weights load.
  /// @throws headprune::Error naming `source` and a fused tensor whose shape the config does not give.
  virtual TensorMap weights_from_file(TensorMap weights, const std::string& source) const;
  /// The inverse of weights_from_file, for what export writes (the model's state dict by name).
  virtual TensorMap weights_to_file(TensorMap weights) const;

  /// Physically removes heads (indices local to the layer's *current* heads, 0-based) of one
  /// layer: slices Q/K/V rows and the output projection's columns, keeps the output bias, and
  /// updates config().kept_heads / pruned_heads. If `scale` is given (shape [current heads]),
  /// each kept head's output-projection columns are first multiplied by its value, folding a
  /// fractional gate into the weights.
  /// @throws headprune::Error on an out-of-range or duplicate index.
  virtual void prune_heads(int64_t layer, const std::vector<int64_t>& remove_local,
                           const torch::Tensor& scale) = 0;

  /// Physically removes FFN neurons (indices local to the layer's *current* neurons, 0-based) of
  /// one layer: slices the rows (and biases) of the input projections (BERT `intermediate.dense`;
  /// LLaMA `gate_proj` and `up_proj`) and the columns of the output projection, whose bias stays,
  /// and updates config().intermediate_sizes. If `scale` is given (shape [current width]), each
  /// kept neuron's output-projection column is first multiplied by its value, folding a
  /// fractional gate into the weights. Removing every neuron leaves the output bias alone.
  /// @throws headprune::Error on an out-of-range or duplicate index or a scale of another shape.
  virtual void prune_ffn(int64_t layer, const std::vector<int64_t>& remove_local, const torch::Tensor& scale) = 0;

  /// Physically removes whole layers (indices of the current layers, any order): attention and
  /// feed-forward block together, the later layers renumbered down ("encoder.layer.N" /
  /// "model.layers.N"), config() updated by ModelConfig::remove_layers. What remains computes
  /// exactly the shallower model, as HF builds it from the exported config.
  /// @throws headprune::Error on an out-of-range or repeated index or all layers (unchanged then).
  virtual void drop_layers(const std::vector<int64_t>& layers) = 0;
  /// Every parameter of layer `layer` (its attention, FFN and norms; not the embeddings or the
  /// head). @throws headprune::Error for a layer out of range.
  virtual std::vector<torch::Tensor> layer_parameters(int64_t layer) const = 0;
  /// Parameter counts: all, and the attention projections' share (Q, K, V, O weights+biases).
  virtual int64_t attention_parameter_count() const = 0;

  /// Adds this model's forward pass (eval mode, no multipliers) to `graph`: declares the int64
  /// [batch_size, sequence_length] inputs it reads (`input_ids`, `attention_mask`, and
  /// `token_type_ids` for BERT, named as Optimum's exports name them) and returns the values it
  /// computes. @throws headprune::Error for a model that cannot be written as ONNX.
  virtual OnnxModelOutputs add_to_onnx(OnnxGraph& graph) const = 0;
  /// Whether forward() also returns each layer's attention probabilities (ModelOutput::attentions).
  virtual void set_output_attentions(bool on) = 0;
  /// Whether forward() also returns each layer's AttentionBlockIO (ModelOutput::attention_io and ffn_io).
  virtual void set_record_attention_io(bool on) = 0;
  /// Layer `layer`'s attention output projection (BERT `attention.output.dense`, LLaMA
  /// `self_attn.o_proj`): weight [hidden_size, heads present × head_dim], bias [hidden_size] or
  /// undefined. Its tensors are the model's own: changing them changes the model.
  virtual Linear output_projection(int64_t layer) const = 0;
  /// Layer `layer`'s FFN output projection (BERT `output.dense`, DistilBERT `lin2`, LLaMA
  /// `mlp.down_proj`): weight [hidden_size, FFN width], bias or undefined. The model's own.
  virtual Linear ffn_output_projection(int64_t layer) const = 0;
  /// Layer `layer`'s query and key projection weights per present head (GQA: each query head
  /// with its KV head's rows). Biases and RoPE are not included; Qwen3's q/k norm weights are
  /// folded into the rows (their per-token 1/RMS scale is not).
  virtual QueryKeyWeights query_key_weights(int64_t layer) const = 0;
  /// The language-model head's weight [vocab, hidden_size], tied or not (logits =
  /// last_hidden_state · weightᵀ: no modelled family has an LM-head bias); undefined for a
  /// model without an LM head. The model's own tensor.
  virtual torch::Tensor lm_head_weight() const { return {}; }
  /// The parameters (by named_parameters() name) this model may hold in the checkpoint file's
  /// dtype when it is narrower than float32 (load_checkpoint with WeightStorage::source): its
  /// forward widens them per use (models/linear.h widened_linear), exactly. Empty (the default):
  /// every weight is widened on load.
  virtual std::set<std::string> narrow_storage_weights() const { return {}; }
  /// Off: forward() leaves ModelOutput::logits undefined, for a caller that applies
  /// lm_head_weight() itself a few tokens at a time (pruner/objectives/chunked_kl.h). On by default.
  void set_compute_logits(bool on) { compute_logits_ = on; }
  bool compute_logits() const { return compute_logits_; }
  /// On: forward() fills ModelOutput::hidden_states (layer-wise distillation,
  /// pruner/objectives/distillation.h). Off by default.
  void set_output_hidden_states(bool on) { output_hidden_states_ = on; }
  bool output_hidden_states() const { return output_hidden_states_; }
  /// On: a forward pass that needs gradients and has head multipliers keeps only each layer's
  /// input and recomputes the layer in backward (models/layer_checkpoint.h), for a family that
  /// supports it (the LLaMA-style stack); layers whose weights require grad run as usual. Off by
  /// default. Gradients equal the plain pass's up to float32 summation order.
  void set_checkpoint_layers(bool on) { checkpoint_layers_ = on; }
  bool checkpoint_layers() const { return checkpoint_layers_; }

 private:
  bool compute_logits_ = true;
  bool output_hidden_states_ = false;
  bool checkpoint_layers_ = false;
};

}  // namespace headprune::models
