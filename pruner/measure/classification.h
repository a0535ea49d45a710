// Accuracy of a checkpoint's classifier head on labelled sentences.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/text/corpus.h"
#include "pruner/text/labelled_text.h"

namespace headprune::pruner {

/// The classifier head's logits [batch, num_labels] for `encoder`'s last_hidden_state
/// [batch, seq, hidden] on inputs whose attention_mask [batch, seq] is given (mean-pooling heads
/// read it; undefined: every token real) (HF `*ForSequenceClassification`,
/// models/sequence_classification.h). `encoder` is the checkpoint's model or a copy of it (a
/// frozen teacher).
/// Differentiable. @throws headprune::Error if the checkpoint has no classifier head.
torch::Tensor classifier_logits(const models::Checkpoint& checkpoint, models::AttentionModel& encoder,
                                const torch::Tensor& last_hidden_state, const torch::Tensor& attention_mask);

/// Accuracy, in [0, 1], of the classifier head over `encoder` (with `multipliers`, may be empty)
/// on tokenized `sequences` with gold `labels` (one class id each), in length-bucketed batches
/// of `batch_size`; no gradient. @throws headprune::Error if the checkpoint has no classifier
/// head or `sequences` is empty.
double sequence_accuracy(const models::Checkpoint& checkpoint, models::AttentionModel& encoder,
                         const models::Multipliers& multipliers,
                         const std::vector<std::vector<int64_t>>& sequences, const std::vector<int64_t>& labels,
                         int64_t pad_id, std::size_t batch_size, const torch::Device& device);

/// Classifier logits [texts, num_labels] (CPU) of an HF `*ForSequenceClassification` for
/// `texts`, in batches of similar length.
/// @throws headprune::Error if the checkpoint has no classifier head or no tokenizer.
torch::Tensor classify_texts(models::Checkpoint& checkpoint, const std::vector<std::string>& texts,
                             std::size_t batch_size, const torch::Device& device);

/// The labelled held-out check of a prune (--labels): accuracy of the classifier head over the
/// dense model and over the pruned one (with `pruned_multipliers`, may be empty) on `corpus`'s
/// held-out sequences, as {"examples", "dense", "pruned"} (accuracies in [0, 1]); null when the
/// corpus has no labels. `checkpoint` holds the classifier (unchanged by pruning).
nlohmann::json heldout_accuracy(const models::Checkpoint& checkpoint, models::AttentionModel& pruned,
                                const models::Multipliers& pruned_multipliers, models::AttentionModel& dense,
                                const Corpus& corpus, std::size_t batch_size, const torch::Device& device);

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
