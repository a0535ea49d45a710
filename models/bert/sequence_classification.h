// The classifier head of HF `BertForSequenceClassification`, for checkpoints that carry one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "models/bert/bert_model.h"
#include "models/config.h"
#include "models/linear.h"

namespace headprune::models {

/// HF `BertForSequenceClassification` minus the encoder (transformers
/// `models/bert/modeling_bert.py`, BertPooler + `classifier`; dropout is inactive at eval):
///   pooled = tanh(pooler.dense(last_hidden_state[:, 0]))   [batch, hidden]
///   logits = classifier(pooled)                            [batch, num_labels]
/// The pooler belongs to BertModel ("pooler.dense"); this module holds "classifier".
class SequenceClassificationHeadImpl : public torch::nn::Module {
 public:
  /// `labels`: label names by id (HF `id2label`), size num_labels.
  SequenceClassificationHeadImpl(int64_t hidden_size, std::vector<std::string> labels);

  /// encoder: a BertModel with a pooler; last_hidden_state: [batch, seq, hidden] ->
  /// logits [batch, num_labels]. @throws headprune::Error if the encoder is not a BertModel with
  /// a pooler.
  torch::Tensor forward(const AttentionModel& encoder, const torch::Tensor& last_hidden_state);

  /// The same as ONNX (models/bert/bert_onnx.cpp): `last_hidden_state` names a [batch, seq,
  /// hidden] value of `graph`; returns the logits' value name [batch, num_labels].
  /// @throws headprune::Error if the encoder is not a BertModel with a pooler.
  std::string add_to_onnx(OnnxGraph& graph, const AttentionModel& encoder,
                          const std::string& last_hidden_state) const;

  int64_t num_labels() const { return static_cast<int64_t>(labels.size()); }

  Linear classifier{nullptr};      ///< "classifier": [num_labels, hidden]
  std::vector<std::string> labels;  ///< id -> name
};
TORCH_MODULE(SequenceClassificationHead);

/// The pooler a BertForSequenceClassification head reads: `encoder`'s "pooler.dense"
/// ([hidden, hidden]; the module itself, shared). @throws headprune::Error if `encoder` is not a
/// BertModel with a pooler.
Linear classification_pooler(const AttentionModel& encoder);

/// Label names by id from config.json's `id2label` (keys are decimal strings, as HF writes
/// them); ids missing there are named "LABEL_<id>" as HF does.
/// @throws headprune::Error if `id2label` has a key that is not an id in [0, num_labels).
std::vector<std::string> label_names(const ModelConfig& config, int64_t num_labels);

}  // namespace headprune::models
