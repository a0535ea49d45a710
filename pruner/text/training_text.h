// Where gate training's text comes from: plain text files (--data) or sentences labelled for
// the checkpoint's classifier (--labels).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/checkpoint.h"
#include "pruner/text/corpus.h"

namespace headprune::pruner {

/// The training text as the user named it. Exactly one of the two is set by the command line.
struct TrainingText {
  std::vector<std::filesystem::path> data;  ///< --data: UTF-8 text, one document per line or paragraph
  /// --labels: `sentence<TAB>label` lines (read_labelled_texts, as `eval --classification`)
  /// for a checkpoint with a classifier head; empty = unlabelled text.
  std::filesystem::path labels;
  bool labelled() const { return !labels.empty(); }
  /// "a.txt, b.txt" or "dev.tsv (labelled)", for logs.
  std::string describe() const;
  /// {"data": [files]}, plus "labels": file when labelled (summary.json, the export's record).
  nlohmann::json to_json() const;
};

/// Reads, shuffles, splits and tokenizes the text (load_corpus; labelled sentences through
/// split_corpus, each keeping its class id). `options.paragraphs` does not apply to labelled
/// sentences (one per line).
/// @throws headprune::Error as load_corpus and read_labelled_texts do, and if `text` is labelled
///         but the checkpoint has no classifier head.
Corpus load_training_text(const TrainingText& text, const models::Checkpoint& checkpoint,
                          const CorpusOptions& options);

}  // namespace headprune::pruner
