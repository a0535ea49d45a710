#include "pruner/text/labelled_text.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "models/input_file.h"
#include "models/integer_key.h"
#include "pruner/log.h"

namespace headprune::pruner {
namespace {

/// The class id `field` names (an id or a label name), or -1.
int64_t parse_label(const std::string& field, const std::vector<std::string>& labels) {
  const auto n = static_cast<int64_t>(labels.size());
  if (const auto id = models::parse_integer_key(field)) return *id >= 0 && *id < n ? *id : -1;
  const auto it = std::find(labels.begin(), labels.end(), field);
  return it == labels.end() ? -1 : static_cast<int64_t>(it - labels.begin());
}

}  // namespace

std::vector<LabelledText> read_labelled_texts(const std::filesystem::path& file,
                                              const std::vector<std::string>& labels) {
  auto in = models::open_input_file(file, "labelled text file");
  std::vector<LabelledText> out;
  std::string line;
  bool first = true;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto tab = line.rfind('\t');
    if (tab == std::string::npos)
      throw Error(fmt::format("{} line {}: no tab; expected sentence<TAB>label", file.string(), n));
    const auto field = line.substr(tab + 1);
    const auto label = parse_label(field, labels);
    if (label < 0) {
      // A header names its column; a number out of range on line 1 is a data error.
      if (first && !models::parse_integer_key(field)) {
        first = false;
        log::info("{}: line {} ('{}') taken as a header", file.string(), n, line);
        continue;
      }
      throw Error(fmt::format("{} line {}: label '{}' is not a class of this model (ids 0..{} "
                              "or names {})",
                              file.string(), n, line.substr(tab + 1), labels.size() - 1,
                              fmt::join(labels, ", ")));
    }
    first = false;
    out.push_back({line.substr(0, tab), label});
  }
  if (out.empty())
    throw Error(fmt::format("{} has no labelled sentences (sentence<TAB>label lines)", file.string()));
  return out;
}

const std::vector<std::string>& classifier_labels(const models::Checkpoint& ckpt, const std::string& flag) {
  if (!ckpt.classifier)
    throw Error(fmt::format("{} has no classifier head: {} needs a *ForSequenceClassification "
                            "checkpoint (BERT, RoBERTa, XLM-R, DistilBERT, MPNet or ModernBERT)",
                            ckpt.dir.string(), flag));
  return ckpt.classifier->labels;
}

}  // namespace headprune::pruner
