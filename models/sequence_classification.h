// The classifier head of an HF `<Family>ForSequenceClassification`, for checkpoints that carry
// one; laid out as the family says (models/classification_layout.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "models/attention_model.h"
#include "models/classification_layout.h"
#include "models/config.h"
#include "models/linear.h"
#include "models/norm.h"

namespace headprune::models {

/// HF `<Family>ForSequenceClassification` minus the encoder (dropout is inactive at eval):
///   h      = last_hidden_state[:, 0], or its mean over real tokens (layout.pooling "mean")   [batch, hidden]
///   logits = out_proj(norm(activation(dense(h))))      [batch, num_labels]  (norm: layout.norm, if any)
/// Parameters are registered under the file's names ("classifier.out_proj.weight", ...), so
/// state_dict and load_weights use them as they are; BERT's `dense` is the encoder's pooler
/// (ClassificationLayout::dense_in_encoder), found in the encoder passed to forward.
class SequenceClassificationHeadImpl : public torch::nn::Module {
 public:
  /// `labels`: label names by id (HF `id2label`), size num_labels.
  SequenceClassificationHeadImpl(ClassificationLayout layout, int64_t hidden_size, std::vector<std::string> labels);

  /// encoder: the model whose last_hidden_state [batch, seq, hidden] this is; attention_mask
  /// [batch, seq] (1 = real token; undefined: all real) -> logits [batch, num_labels].
  /// @throws headprune::Error if the layout's dense layer is the encoder's and `encoder` has none
  /// (a BERT without its pooler).
  torch::Tensor forward(const AttentionModel& encoder, const torch::Tensor& last_hidden_state,
                        const torch::Tensor& attention_mask);

  /// The same as ONNX: `last_hidden_state` names a [batch, seq, hidden] value of `graph`,
  /// `attention_mask` its int64 [batch, seq] input; returns the logits' value name [batch,
  /// num_labels]. @throws headprune::Error as forward.
  std::string add_to_onnx(OnnxGraph& graph, const AttentionModel& encoder, const std::string& last_hidden_state,
                          const std::string& attention_mask) const;

  int64_t num_labels() const { return static_cast<int64_t>(labels.size()); }

  ClassificationLayout layout;
  Linear dense{nullptr};            ///< layout.dense: [hidden, hidden]; null if dense_in_encoder
  Linear out_proj{nullptr};         ///< layout.out_proj: [num_labels, hidden]
  Norm norm{nullptr};               ///< layout.norm: LayerNorm [hidden], or null
  std::vector<std::string> labels;  ///< id -> name

 private:
  /// The dense layer forward uses: the head's own, or the encoder's module named layout.dense.
  Linear dense_for(const AttentionModel& encoder) const;
};
TORCH_MODULE(SequenceClassificationHead);

/// Label names by id from config.json's `id2label` (keys are decimal strings, as HF writes
/// them); ids missing there are named "LABEL_<id>" as HF does.
/// @throws headprune::Error if `id2label` has a key that is not an id in [0, num_labels).
std::vector<std::string> label_names(const ModelConfig& config, int64_t num_labels);

}  // namespace headprune::models
