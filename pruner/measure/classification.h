// Accuracy of a checkpoint's classifier head on labelled sentences.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// One labelled sentence; `label` is a class id of the model's classifier.
struct LabelledText {
  std::string text;
  int64_t label = 0;
};

/// Reads `sentence<TAB>label` lines (GLUE SST-2 `train.tsv`/`dev.tsv` layout; split at the
/// last tab, no quoting, CRLF tolerated, blank lines skipped). The label is a class id in
/// [0, labels.size()) or one of `labels` (the model's id2label names). A first line whose
/// label field is neither (e.g. `sentence<TAB>label`) is a header and skipped.
/// @throws headprune::Error naming the file and line for a line without a tab, an unknown
///         label, or a file without examples.
std::vector<LabelledText> read_labelled_texts(const std::filesystem::path& file,
                                              const std::vector<std::string>& labels);

/// The checkpoint's label names (id2label), for read_labelled_texts.
/// @throws headprune::Error if the checkpoint has no classifier head.
const std::vector<std::string>& classifier_labels(const models::Checkpoint& checkpoint);

/// Classifier logits [texts, num_labels] (CPU) of HF BertForSequenceClassification for
/// `texts`, in batches of similar length.
/// @throws headprune::Error if the checkpoint has no classifier head or no tokenizer.
torch::Tensor classify_texts(models::Checkpoint& checkpoint, const std::vector<std::string>& texts,
                             std::size_t batch_size, const torch::Device& device);

/// Accuracy = share of examples whose arg-max logit is the gold label.
struct ClassificationResult {
  int64_t examples = 0;
  int64_t correct = 0;
  double accuracy = 0;                 ///< correct / examples, in [0, 1]
  std::vector<int64_t> per_label_examples, per_label_correct;
  nlohmann::json to_json(const std::vector<std::string>& labels) const;
};
ClassificationResult evaluate_classification(models::Checkpoint& checkpoint,
                                             const std::vector<LabelledText>& examples,
                                             std::size_t batch_size, const torch::Device& device);

}  // namespace headprune::pruner
