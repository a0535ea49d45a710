// Where an HF `<Family>ForSequenceClassification` keeps its encoder and classifier head in
// model.safetensors, and what the head computes. LibTorch-free (models/model_family.h).
#pragma once

#include <string>
#include <utility>

namespace headprune::models {

/// The sequence-classification head of one encoder family, as its HF class lays it out. On the
/// pooled final hidden state h ([batch, hidden]: the first token's, or with `pooling` "mean" the
/// mean over real tokens):
///   logits = out_proj(norm(activation(dense(h))))        [batch, num_labels]
/// (dropout is inactive at eval; `norm` only where the layout names one). transformers:
/// BertForSequenceClassification (BertPooler, then `classifier`), RobertaClassificationHead /
/// MPNetClassificationHead (`classifier.dense`, tanh, `classifier.out_proj`),
/// DistilBertForSequenceClassification (`pre_classifier`, ReLU, `classifier`),
/// ModernBertForSequenceClassification (classifier_pooling, then ModernBertPredictionHead
/// `head.dense`, classifier_activation, `head.norm`, then `classifier`).
struct ClassificationLayout {
  /// The first-token head with a biased `dense` and no norm; the other fields are set after.
  ClassificationLayout(std::string architecture_, std::string encoder_prefix_, std::string dense_,
                       bool dense_in_encoder_, std::string activation_, std::string out_proj_)
      : architecture(std::move(architecture_)), encoder_prefix(std::move(encoder_prefix_)), dense(std::move(dense_)),
        dense_in_encoder(dense_in_encoder_), activation(std::move(activation_)), out_proj(std::move(out_proj_)) {}

  std::string architecture;      ///< the HF class, e.g. "RobertaForSequenceClassification"
  std::string encoder_prefix;    ///< the encoder's keys' prefix in its file, e.g. "roberta."
  std::string dense;             ///< the [hidden, hidden] layer's module, e.g. "classifier.dense"
  bool dense_in_encoder = false;  ///< BERT: `dense` is the encoder's own pooler ("pooler.dense")
  std::string activation;        ///< HF activation name: "tanh", "relu", "gelu", "gelu_pytorch_tanh", "silu"
  std::string out_proj;          ///< the [num_labels, hidden] layer's module, e.g. "classifier"
  std::string pooling = "cls";   ///< "cls" (first token) or "mean" (over real tokens)
  bool dense_bias = true;        ///< whether `dense` has a bias (ModernBERT: classifier_bias)
  std::string norm;              ///< a LayerNorm's module after the activation ("head.norm"), or empty
  double norm_eps = 1e-5;        ///< its epsilon
  bool norm_bias = true;         ///< whether it has a bias
};

}  // namespace headprune::models
