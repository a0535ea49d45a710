// Where an HF `<Family>ForSequenceClassification` keeps its encoder and classifier head in
// model.safetensors, and what the head computes. LibTorch-free (models/model_family.h).
#pragma once

#include <string>

namespace headprune::models {

/// The sequence-classification head of one encoder family, as its HF class lays it out. On the
/// first token's final hidden state h = last_hidden_state[:, 0] ([batch, hidden]):
///   logits = out_proj(activation(dense(h)))        [batch, num_labels]
/// (dropout is inactive at eval). transformers: BertForSequenceClassification (BertPooler, then
/// `classifier`), RobertaClassificationHead / MPNetClassificationHead (`classifier.dense`, tanh,
/// `classifier.out_proj`), DistilBertForSequenceClassification (`pre_classifier`, ReLU,
/// `classifier`).
struct ClassificationLayout {
  std::string architecture;      ///< the HF class, e.g. "RobertaForSequenceClassification"
  std::string encoder_prefix;    ///< the encoder's keys' prefix in its file, e.g. "roberta."
  std::string dense;             ///< the [hidden, hidden] layer's module, e.g. "classifier.dense"
  bool dense_in_encoder = false;  ///< BERT: `dense` is the encoder's own pooler ("pooler.dense")
  std::string activation;        ///< "tanh" or "relu"
  std::string out_proj;          ///< the [num_labels, hidden] layer's module, e.g. "classifier"
};

}  // namespace headprune::models
