#include "models/bert/sequence_classification.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/integer_key.h"

namespace headprune::models {

SequenceClassificationHeadImpl::SequenceClassificationHeadImpl(int64_t hidden_size,
                                                               std::vector<std::string> names)
    : labels(std::move(names)) {
  classifier = register_module("classifier", Linear(hidden_size, num_labels()));
}

Linear classification_pooler(const AttentionModel& encoder) {
  const auto* bert = dynamic_cast<const BertModel*>(&encoder);
  if (!bert || !bert->pooler_dense)
    throw Error("the checkpoint has a classifier but no pooler (pooler.dense): "
                "BertForSequenceClassification needs both");
  return bert->pooler_dense;
}

torch::Tensor SequenceClassificationHeadImpl::forward(const AttentionModel& encoder,
                                                      const torch::Tensor& last_hidden_state) {
  auto pooler = classification_pooler(encoder);
  auto pooled = torch::tanh(pooler->forward(last_hidden_state.select(1, 0)));
  return classifier->forward(pooled);
}

std::vector<std::string> label_names(const ModelConfig& config, int64_t num_labels) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < num_labels; ++i) names.push_back(fmt::format("LABEL_{}", i));
  const auto it = config.raw.find("id2label");
  if (it == config.raw.end() || !it->is_object()) return names;
  for (const auto& [key, value] : it->items()) {
    const int64_t id = parse_integer_key(key).value_or(-1);
    if (id < 0 || id >= num_labels)
      throw Error(fmt::format("config.json id2label has key '{}', but the classifier has {} "
                              "labels (ids 0..{})",
                              key, num_labels, num_labels - 1));
    if (!value.is_string())
      throw Error(fmt::format("config.json id2label['{}'] must be a string", key));
    names[static_cast<size_t>(id)] = value.get<std::string>();
  }
  return names;
}

}  // namespace headprune::models
