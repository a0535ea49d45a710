#include "pruner/measure/classification.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/log.h"
#include "pruner/text/text_batches.h"

namespace headprune::pruner {

torch::Tensor classifier_logits(const models::Checkpoint& ckpt, models::AttentionModel& encoder,
                                const torch::Tensor& last_hidden_state, const torch::Tensor& attention_mask) {
  classifier_labels(ckpt);
  auto head = ckpt.classifier;  // the holder shares the module; forward() is not const
  return head->forward(encoder, last_hidden_state, attention_mask);
}

torch::Tensor classify_texts(models::Checkpoint& ckpt, const std::vector<std::string>& texts,
                             std::size_t batch_size, const torch::Device& device) {
  classifier_labels(ckpt);
  return run_texts(ckpt, texts, batch_size, device, ckpt.classifier->num_labels(),
                   [&](const models::ModelInputs& in, const torch::Tensor& hidden) {
                     return classifier_logits(ckpt, *ckpt.model, hidden, in.attention_mask);
                   });
}

double sequence_accuracy(const models::Checkpoint& ckpt, models::AttentionModel& encoder,
                         const models::Multipliers& multipliers,
                         const std::vector<std::vector<int64_t>>& sequences, const std::vector<int64_t>& labels,
                         int64_t pad_id, std::size_t batch_size, const torch::Device& device) {
  classifier_labels(ckpt);
  if (sequences.empty() || sequences.size() != labels.size())
    throw Error(fmt::format("accuracy needs one label per sequence ({} sequences, {} labels)", sequences.size(),
                            labels.size()));
  torch::NoGradGuard no_grad;
  int64_t correct = 0;
  for (const auto& bucket : length_buckets(sequences, batch_size)) {
    const auto in = make_inputs(sequences, bucket, pad_id, device);
    const auto predicted = classifier_logits(ckpt, encoder, encoder.forward(in, multipliers).last_hidden_state, in.attention_mask)
                               .argmax(1).to(torch::kCPU);
    for (std::size_t i = 0; i < bucket.size(); ++i)
      correct += predicted[static_cast<int64_t>(i)].item<int64_t>() == labels[bucket[i]] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(sequences.size());
}

nlohmann::json heldout_accuracy(const models::Checkpoint& ckpt, models::AttentionModel& pruned,
                                const models::Multipliers& pruned_multipliers, models::AttentionModel& dense,
                                const Corpus& corpus, std::size_t batch_size, const torch::Device& device) {
  if (corpus.heldout_labels.empty()) return nullptr;
  const auto accuracy = [&](models::AttentionModel& model, const models::Multipliers& m) {
    return sequence_accuracy(ckpt, model, m, corpus.heldout, corpus.heldout_labels, corpus.pad_id, batch_size,
                             device);
  };
  nlohmann::json j = {{"examples", corpus.heldout.size()},
                      {"dense", accuracy(dense, {})},
                      {"pruned", accuracy(pruned, pruned_multipliers)}};
  log::info("held-out accuracy on {} labelled sentences: dense {:.2f}%, pruned {:.2f}%", corpus.heldout.size(),
            100 * j["dense"].get<double>(), 100 * j["pruned"].get<double>());
  return j;
}

ClassificationResult evaluate_classification(models::Checkpoint& ckpt,
                                             const std::vector<LabelledText>& examples,
                                             std::size_t batch_size, const torch::Device& device) {
  std::vector<std::string> texts;
  for (const auto& e : examples) texts.push_back(e.text);
  const auto predicted = classify_texts(ckpt, texts, batch_size, device).argmax(1);
  ClassificationResult r;
  const auto labels = static_cast<size_t>(ckpt.classifier->num_labels());
  r.per_label_examples.assign(labels, 0);
  r.per_label_correct.assign(labels, 0);
  for (size_t i = 0; i < examples.size(); ++i) {
    const auto gold = static_cast<size_t>(examples[i].label);
    ++r.per_label_examples[gold];
    if (predicted[static_cast<int64_t>(i)].item<int64_t>() == examples[i].label) {
      ++r.correct;
      ++r.per_label_correct[gold];
    }
  }
  r.examples = static_cast<int64_t>(examples.size());
  r.accuracy = static_cast<double>(r.correct) / static_cast<double>(r.examples);
  return r;
}

nlohmann::json ClassificationResult::to_json(const std::vector<std::string>& labels) const {
  nlohmann::json per_label = nlohmann::json::object();
  for (size_t i = 0; i < per_label_examples.size(); ++i)
    per_label[i < labels.size() ? labels[i] : std::to_string(i)] = {
        {"examples", per_label_examples[i]}, {"correct", per_label_correct[i]}};
  return {{"examples", examples}, {"correct", correct}, {"accuracy", accuracy}, {"per_label", per_label}};
}

}  // namespace headprune::pruner
