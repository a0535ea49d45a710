// BERT-family encoder (BertModel), with per-layer head counts.
//
// Module tree mirrors HF transformers `modeling_bert.py`, so named_parameters() are exactly the
// checkpoint keys:
//   embeddings.{word_embeddings,position_embeddings,token_type_embeddings,LayerNorm}
//   encoder.layer.N.attention.self.{query,key,value}       Q/K/V: [heads*head_dim, H]
//   encoder.layer.N.attention.output.{dense,LayerNorm}      O: [H, heads*head_dim]
//   encoder.layer.N.intermediate.dense, encoder.layer.N.output.{dense,LayerNorm}
//   pooler.dense (only when the checkpoint has it)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>

#include "models/attention_model.h"
#include "models/linear.h"

namespace headprune::models {

/// Self-attention of one layer with `num_heads` heads of `head_dim` (num_heads may be 0).
class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  BertSelfAttentionImpl(int64_t hidden_size, int64_t num_heads, int64_t head_dim);
  /// x: [B, T, H]; mask_bias: additive, broadcastable to [B, num_heads, T, T] (the padding mask
  /// [B, 1, 1, T], plus MPNet's relative position bias [1, num_heads, T, T]), or
  /// undefined when no key is padding;
  /// multiplier: undefined or [num_heads]. @returns the per-head context, concatenated:
  /// [B, T, num_heads*head_dim], each head scaled by its multiplier.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                        const torch::Tensor& multiplier);
  int64_t num_heads;
  int64_t head_dim;
  bool record_probs = false;  ///< keep the last forward's probabilities in `probs`
  torch::Tensor probs;        ///< [B, num_heads, T, T], detached, when record_probs
  Linear query{nullptr}, key{nullptr}, value{nullptr};
};
TORCH_MODULE(BertSelfAttention);

/// Output projection + residual + LayerNorm (HF `BertSelfOutput` / `BertOutput`).
class BertProjectionImpl : public torch::nn::Module {
 public:
  BertProjectionImpl(int64_t in_features, int64_t hidden_size, double eps);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& residual);
  Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertProjection);

/// HF `BertAttention`: members `self` and `output`.
class BertAttentionImpl : public torch::nn::Module {
 public:
  BertAttentionImpl(const ModelConfig& config, int64_t num_heads);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                        const torch::Tensor& multiplier);
  BertSelfAttention self{nullptr};
  BertProjection output{nullptr};
  bool record_io = false;  ///< keep the last forward's input and context in `io`
  AttentionBlockIO io;     ///< detached, when record_io
};
TORCH_MODULE(BertAttention);

/// HF `BertIntermediate`: dense [I, H] then the activation (gelu / gelu_new / relu).
class BertIntermediateImpl : public torch::nn::Module {
 public:
  BertIntermediateImpl(int64_t hidden_size, int64_t intermediate_size, std::string hidden_act);
  torch::Tensor forward(const torch::Tensor& x);
  Linear dense{nullptr};

 private:
  std::string hidden_act_;
};
TORCH_MODULE(BertIntermediate);

/// One encoder layer: attention, then the feed-forward block.
class BertLayerImpl : public torch::nn::Module {
 public:
  BertLayerImpl(const ModelConfig& config, int64_t num_heads, int64_t intermediate_size);
  /// multiplier: undefined or [num_heads]; ffn_multiplier: undefined or [FFN width], on the
  /// intermediate activation (AttentionModel's FfnMultipliers).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                        const torch::Tensor& multiplier, const torch::Tensor& ffn_multiplier = {});
  AttentionBlockIO ffn_io;  ///< the FFN block's input and activation, when attention->record_io
  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertProjection output{nullptr};
};
TORCH_MODULE(BertLayer);

/// Word + position + token-type embeddings, then LayerNorm; without token types when
/// config.type_vocab_size is 0 (DistilBERT, MPNet); positions counted after padding_idx when
/// config.position_padding_idx >= 0 (MPNet).
class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit BertEmbeddingsImpl(const ModelConfig& config);
  /// input_ids, token_type_ids (may be undefined): [B, T] -> [B, T, H].
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids);
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr},
      token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};

 private:
  int64_t position_padding_idx_;  ///< ModelConfig::position_padding_idx
};
TORCH_MODULE(BertEmbeddings);

/// HF `BertModel` (encoder; `last_hidden_state` is the output; the pooler, if present, is
/// kept for export but not used by sentence embeddings).
class BertModel : public AttentionModel {
 public:
  /// Builds with random weights, shaped by config.kept_heads. @throws headprune::Error if the
  /// config has grouped key/value heads (not an encoder of this shape).
  BertModel(ModelConfig config, bool with_pooler);

  const ModelConfig& config() const override { return config_; }
  /// @throws headprune::Error when a sequence is longer than max_position_embeddings or a
  /// multiplier has the wrong shape.
  ModelOutput forward(const ModelInputs& inputs, const Multipliers& multipliers) override;
  using AttentionModel::forward;
  void prune_heads(int64_t layer, const std::vector<int64_t>& remove_local,
                   const torch::Tensor& scale) override;
  void prune_ffn(int64_t layer, const std::vector<int64_t>& remove_local, const torch::Tensor& scale) override;
  void drop_layers(const std::vector<int64_t>& layers) override;
  std::vector<torch::Tensor> layer_parameters(int64_t layer) const override;
  int64_t attention_parameter_count() const override;
  /// HF BertModel as ONNX (models/bert/bert_onnx.cpp): a layer with no heads adds only its
  /// output projection's bias before the residual LayerNorm.
  OnnxModelOutputs add_to_onnx(OnnxGraph& graph) const override;
  void set_output_attentions(bool on) override;
  void set_record_attention_io(bool on) override;
  Linear output_projection(int64_t layer) const override;
  Linear ffn_output_projection(int64_t layer) const override;
  QueryKeyWeights query_key_weights(int64_t layer) const override;

  BertEmbeddings embeddings{nullptr};
  std::vector<BertLayer> layers;  ///< registered as "encoder.layer.N"
  Linear pooler_dense{nullptr};   ///< "pooler.dense", or empty
  /// "encoder.relative_attention_bias" [buckets, num_attention_heads] (MPNet; every original
  /// head's column, whatever was pruned: layer l uses the columns of config.kept_heads[l]), or
  /// empty.
  torch::nn::Embedding relative_attention_bias{nullptr};

 private:
  /// The relative position bias of every original head, [1, heads, T, T] in `like`'s dtype and
  /// device, or undefined without a table.
  torch::Tensor relative_position_bias(int64_t seq_len, const torch::Tensor& like) const;
  /// Layer `layer`'s additive attention bias: its kept heads' position bias plus the padding
  /// mask (either may be undefined).
  torch::Tensor layer_bias(int64_t layer, const torch::Tensor& position_bias, const torch::Tensor& mask_bias) const;

  ModelConfig config_;
};

}  // namespace headprune::models
