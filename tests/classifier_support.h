// The real BertForSequenceClassification checkpoint the classification tests use.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "models/config.h"
#include "models/formats/safetensors.h"
#include "tests/test_support.h"

namespace headprune::testing {

/// all-MiniLM-L6-v2 turned into the classifier checkpoint tests/fixtures/minilm/sst2_reference.json
/// was computed on (what tools/make_classifier_fixture.py's compose() writes): config.json with
/// BertForSequenceClassification and negative/positive labels, "bert."-prefixed encoder weights
/// plus the fixture's linear probe (classifier.weight [2, 384], classifier.bias [2]).
inline std::filesystem::path classifier_checkpoint() {
  namespace fs = std::filesystem;
  const auto src = minilm_dir();
  const auto dir = temp_dir("minilm-sst2");
  for (const auto& e : fs::directory_iterator(src)) {
    const auto name = e.path().filename().string();
    if (name == "config.json" || name == "model.safetensors" || name.front() == '.') continue;
    if (e.is_directory()) fs::copy(e.path(), dir / name, fs::copy_options::recursive);
    else if (e.path().extension() == ".json" || e.path().extension() == ".txt") fs::copy_file(e.path(), dir / name);
  }
  auto config = models::read_json_file(src / "config.json");
  config["architectures"] = {"BertForSequenceClassification"};
  config["id2label"] = {{"0", "negative"}, {"1", "positive"}};
  config["label2id"] = {{"negative", 0}, {"positive", 1}};
  std::ofstream(dir / "config.json") << config.dump(2);
  models::TensorMap weights;
  for (auto& [k, v] : models::load_safetensors(src / "model.safetensors")) weights["bert." + k] = v;
  for (auto& [k, v] : models::load_safetensors(fixture_path("minilm/sst2_classifier.safetensors"))) weights[k] = v;
  models::save_safetensors(dir / "model.safetensors", weights);
  return dir;
}

}  // namespace headprune::testing
