#include "pruner/text/training_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "pruner/log.h"
#include "pruner/text/labelled_text.h"

namespace headprune::pruner {

std::string TrainingText::describe() const {
  if (labelled()) return labels.string() + " (labelled)";
  return fmt::format("{}", fmt::join(to_json()["data"].get<std::vector<std::string>>(), ", "));
}

nlohmann::json TrainingText::to_json() const {
  std::vector<std::string> names;
  for (const auto& f : data) names.push_back(f.string());
  nlohmann::json j = {{"data", names}};
  if (labelled()) j["labels"] = labels.string();
  return j;
}

namespace {

Corpus read_training_text(const TrainingText& text, const models::Checkpoint& checkpoint,
                          const CorpusOptions& options) {
  if (!text.labelled()) return load_corpus(text.data, *checkpoint.tokenizer, options);
  const auto examples = read_labelled_texts(text.labels, classifier_labels(checkpoint, "--labels"));
  std::vector<std::string> sentences;
  std::vector<int64_t> labels;
  for (const auto& e : examples) {
    sentences.push_back(e.text);
    labels.push_back(e.label);
  }
  return split_corpus(std::move(sentences), labels, *checkpoint.tokenizer, options, text.labels.string());
}

}  // namespace

Corpus load_training_text(const TrainingText& text, const models::Checkpoint& checkpoint,
                          const CorpusOptions& options) {
  if (!checkpoint.tokenizer) throw Error(fmt::format("{} has no tokenizer", checkpoint.dir.string()));
  auto corpus = read_training_text(text, checkpoint, options);
  log::info("text {}: {}", text.describe(), corpus.profile.describe());
  for (const auto& warning : text_warnings(corpus.profile)) log::warn("{}", warning);
  return corpus;
}

}  // namespace headprune::pruner
