// Labelled sentences (`--labels`, `eval --classification`): `sentence<TAB>label` lines read
// against the class names of the checkpoint's classifier head.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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

/// The checkpoint's label names (id2label), for read_labelled_texts; `flag` (the option that
/// needs them, e.g. "--classification") names the request in the error.
/// @throws headprune::Error if the checkpoint has no classifier head.
const std::vector<std::string>& classifier_labels(const models::Checkpoint& checkpoint,
                                                  const std::string& flag = "--classification");

}  // namespace headprune::pruner
