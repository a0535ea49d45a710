// A BertForSequenceClassification checkpoint: loading its head, accuracy, export.
// Reference: tests/fixtures/minilm/sst2_{classifier.safetensors,reference.json} from
// tools/make_classifier_fixture.py (transformers 4.46.3): a linear probe on all-MiniLM-L6-v2
// and HF's logits/accuracy on the last 872 rows of SST-2 train.tsv.
// Tolerances: logits max |diff| <= 1e-4; the number of correct predictions equal.
#include <fstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "pruner/measure/classification.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "tests/classifier_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

using testing::classifier_checkpoint;

/// The evaluation split: header + the last `rows` rows of SST-2 train.tsv.
fs::path eval_split(int64_t first_row) {
  std::ifstream in(testing::shared_data_dir() / "sst2/train.tsv");
  CATCH_REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  const auto file = testing::temp_dir("sst2") / "eval.tsv";
  std::ofstream out(file);
  out << lines.front() << "\n";  // header
  for (size_t i = 1 + static_cast<size_t>(first_row); i < lines.size(); ++i) out << lines[i] << "\n";
  return file;
}

}  // namespace

CATCH_TEST_CASE("classifier head: logits and accuracy match transformers", "[classification][minilm]") {
  const auto reference = models::read_json_file(testing::fixture_path("minilm/sst2_reference.json"));
  auto ckpt = models::load_checkpoint(classifier_checkpoint(), torch::kCPU);
  CATCH_REQUIRE(ckpt.classifier);
  CATCH_CHECK(ckpt.unused_keys.empty());
  CATCH_CHECK(ckpt.classifier->labels == std::vector<std::string>{"negative", "positive"});

  const auto texts = reference["texts"].get<std::vector<std::string>>();
  auto logits = pruner::classify_texts(ckpt, texts, 5, torch::kCPU);
  std::vector<float> flat;
  for (const auto& row : reference["logits"]) for (const auto& v : row) flat.push_back(v.get<float>());
  auto expected = torch::tensor(flat).view({static_cast<int64_t>(texts.size()), 2});
  CATCH_CHECK((logits - expected).abs().max().item<double>() <=
              testing::float32_tolerance(ckpt.model->config(), expected));

  const auto examples = pruner::read_labelled_texts(eval_split(reference["eval_first_row"].get<int64_t>()),
                                                    ckpt.classifier->labels);
  CATCH_REQUIRE(examples.size() == reference["eval_rows"].get<size_t>());
  auto r = pruner::evaluate_classification(ckpt, examples, 64, torch::kCPU);
  CATCH_CHECK(r.correct == reference["correct"].get<int64_t>());
  CATCH_CHECK(r.accuracy == Approx(reference["accuracy"].get<double>()).margin(1e-12));
}

CATCH_TEST_CASE("a pruned classifier checkpoint exports in HF's layout and reloads", "[classification][minilm]") {
  const auto dir = classifier_checkpoint();
  auto ckpt = models::load_checkpoint(dir, torch::kCPU);
  auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0": [1, 2], "5": [0]})"),
                                             ckpt.model->config());
  const auto out = testing::temp_dir("sst2-pruned") / "out";
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto written = models::load_safetensors(out / "model.safetensors");
  CATCH_CHECK(written.count("classifier.weight") == 1);
  CATCH_CHECK(written.count("bert.embeddings.word_embeddings.weight") == 1);
  CATCH_CHECK(written.count("embeddings.word_embeddings.weight") == 0);
  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  CATCH_REQUIRE(reloaded.classifier);
  const std::vector<std::string> texts = {"a gripping, funny film", "dull and far too long"};
  auto a = pruner::classify_texts(ckpt, texts, 2, torch::kCPU);
  auto b = pruner::classify_texts(reloaded, texts, 2, torch::kCPU);
  CATCH_CHECK((a - b).abs().max().item<double>() == 0);
}

CATCH_TEST_CASE("labelled files: header skipped, bad lines named", "[classification]") {
  const auto dir = testing::temp_dir("labels");
  const std::vector<std::string> labels = {"negative", "positive"};
  std::ofstream(dir / "ok.tsv") << "sentence\tlabel\r\nit is\tgood\t1\n\nbad movie\tnegative\n";
  auto ok = pruner::read_labelled_texts(dir / "ok.tsv", labels);
  CATCH_REQUIRE(ok.size() == 2);
  CATCH_CHECK(ok[0].text == "it is\tgood");
  CATCH_CHECK(ok[0].label == 1);
  CATCH_CHECK(ok[1].label == 0);
  std::ofstream(dir / "notab.tsv") << "sentence\tlabel\nno tab here\n";
  CATCH_CHECK_THROWS_WITH(pruner::read_labelled_texts(dir / "notab.tsv", labels),
                          Catch::Contains("line 2") && Catch::Contains("no tab"));
  std::ofstream(dir / "unknown.tsv") << "fine\t1\nodd\t7\n";
  CATCH_CHECK_THROWS_WITH(pruner::read_labelled_texts(dir / "unknown.tsv", labels),
                          Catch::Contains("line 2") && Catch::Contains("'7'"));
  // A number out of range on line 1 is bad data, not a header.
  std::ofstream(dir / "first.tsv") << "good movie\t7\nbad movie\t0\n";
  CATCH_CHECK_THROWS_WITH(pruner::read_labelled_texts(dir / "first.tsv", labels),
                          Catch::Contains("line 1") && Catch::Contains("'7'"));
  std::ofstream(dir / "empty.tsv") << "sentence\tlabel\n";
  CATCH_CHECK_THROWS_WITH(pruner::read_labelled_texts(dir / "empty.tsv", labels),
                          Catch::Contains("no labelled sentences"));
  auto plain = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(pruner::classify_texts(plain, {"x"}, 1, torch::kCPU),
                          Catch::Contains("no classifier head"));
}
