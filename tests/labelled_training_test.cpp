// Training with the task's labels (--labels): the cross-entropy and its mix with the
// distillation against hand-computed values, labels that stay with their sentences through the
// shuffle and split, and a real labelled run on the SST-2 classifier fixture whose logged loss
// is the documented mix and whose held-out accuracy equals eval --classification's.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/loader.h"
#include "pruner/measure/classification.h"
#include "pruner/objectives/task_loss.h"
#include "pruner/text/training_text.h"
#include "pruner/training/gate_training.h"
#include "tests/classifier_support.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

/// The first `rows` labelled rows of SST-2 train.tsv (header kept) as a --labels file.
fs::path sst2_rows(std::size_t rows) {
  std::ifstream in(testing::shared_data_dir() / "sst2/train.tsv");
  CATCH_REQUIRE(in.good());
  const auto file = testing::temp_dir("sst2-labels") / "train.tsv";
  std::ofstream out(file);
  std::string line;
  for (std::size_t n = 0; n <= rows && std::getline(in, line); ++n) out << line << "\n";
  return file;
}

}  // namespace

CATCH_TEST_CASE("the labels' cross-entropy and its mix equal their hand-computed values", "[labels]") {
  // Row 0: softmax(ln 3, 0) = (3/4, 1/4), gold 0 -> ln(4/3). Row 1: (1/2, 1/2), gold 1 -> ln 2.
  const auto logits = torch::tensor({{std::log(3.0), 0.0}, {0.0, 0.0}});
  const auto labels = torch::tensor({0, 1}, torch::kLong);
  const double expected = (std::log(4.0 / 3.0) + std::log(2.0)) / 2;
  CATCH_CHECK(pruner::label_cross_entropy(logits, labels).item<double>() == Approx(expected).epsilon(1e-6));
  // In a data-parallel job the sentence count is the whole batch's (here twice this share).
  const pruner::GlobalSum doubled = [](const torch::Tensor& t) { return 2 * t; };
  CATCH_CHECK(pruner::label_cross_entropy(logits, labels, doubled).item<double>() ==
              Approx(expected / 2).epsilon(1e-6));
  pruner::DistillationLoss distilled;
  distilled.hidden = torch::tensor(0.2);
  distilled.embedding = torch::tensor(0.1);
  distilled.total = torch::tensor(0.3);
  const auto mixed = pruner::with_label_loss(distilled, torch::tensor(0.7), 0.25);
  CATCH_CHECK(mixed.total.item<double>() == Approx(0.25 * 0.7 + 0.75 * 0.3).epsilon(1e-6));
  CATCH_CHECK(mixed.label.item<double>() == Approx(0.7).epsilon(1e-6));
  CATCH_CHECK(mixed.hidden.item<double>() == Approx(0.2).epsilon(1e-6));
  CATCH_CHECK(mixed.parts().contains("label_loss"));
}

CATCH_TEST_CASE("labels stay with their sentences through the shuffle and split", "[labels][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  std::vector<std::string> documents;
  std::vector<int64_t> ids;
  const auto file = testing::temp_dir("labels-split") / "text.txt";
  std::ofstream out(file);
  for (int i = 0; i < 40; ++i) {
    documents.push_back(fmt::format("sentence number {} of the test", i));
    ids.push_back(i);  // the label names its document
    out << documents.back() << "\n";
  }
  out.close();
  pruner::CorpusOptions o;
  o.holdout_fraction = 0.25;
  const auto labelled = pruner::split_corpus(documents, ids, *ckpt.tokenizer, o, "test");
  CATCH_REQUIRE(labelled.train_labels.size() == labelled.train.size());
  CATCH_REQUIRE(labelled.heldout_labels.size() == labelled.heldout.size());
  for (std::size_t j = 0; j < labelled.heldout.size(); ++j)
    CATCH_CHECK(labelled.heldout_text[j] == documents[labelled.heldout_labels[j]]);
  for (std::size_t j = 0; j < labelled.train.size(); ++j)
    CATCH_CHECK(labelled.train[j] == ckpt.tokenizer->encode(documents[labelled.train_labels[j]], o.max_length));
  // The same text without labels splits exactly as before labels existed (load_corpus).
  const auto plain = pruner::load_corpus({file}, *ckpt.tokenizer, o);
  CATCH_CHECK(plain.train == labelled.train);
  CATCH_CHECK(plain.heldout_text == labelled.heldout_text);
  CATCH_CHECK(plain.train_labels.empty());
  CATCH_CHECK_THROWS_WITH(pruner::split_corpus(documents, {1, 2}, *ckpt.tokenizer, o, "test"),
                          Catch::Contains("2 labels for 40 documents"));
}

CATCH_TEST_CASE("labelled gate training logs the documented mix and checks held-out accuracy",
                "[labels][classification][minilm]") {
  auto ckpt = models::load_checkpoint(testing::classifier_checkpoint(), torch::kCPU);
  pruner::TrainingText text;
  text.labels = sst2_rows(160);
  pruner::CorpusOptions co;
  co.holdout_fraction = 0.25;
  const auto corpus = pruner::load_training_text(text, ckpt, co);
  CATCH_REQUIRE(corpus.heldout_labels.size() == corpus.heldout.size());
  pruner::GateTrainingOptions o;
  o.target_sparsity = 0.25;
  o.steps = 4;
  o.max_extra_steps = 0;  // exactly 4 logged steps
  o.batch_size = 16;
  o.label_weight = 0.3;
  o.log_every = 1;
  o.save_every = 0;
  o.out_dir = testing::temp_dir("labelled-gates");
  const auto state = pruner::train_gates(ckpt, corpus, o);
  // Every logged step: loss - regulariser = w * label_loss + (1 - w) * (hidden + embedding).
  std::ifstream log(o.out_dir / "train_log.jsonl");
  int steps = 0;
  for (std::string line; std::getline(log, line); ++steps) {
    const auto r = nlohmann::json::parse(line);
    CATCH_REQUIRE(r.contains("label_loss"));
    const double distilled = r["hidden_loss"].get<double>() + o.embedding_weight * r["embedding_loss"].get<double>();
    const double mixed = 0.3 * r["label_loss"].get<double>() + 0.7 * distilled;
    CATCH_CHECK(r["loss"].get<double>() - r["regularizer"].get<double>() == Approx(mixed).epsilon(1e-5));
    CATCH_CHECK(r["label_loss"].get<double>() > 0);
  }
  CATCH_CHECK(steps == 4);
  // The dense held-out accuracy equals eval --classification's on the same sentences (an
  // independent path: it tokenizes the text itself and batches differently).
  const auto& accuracy = state.summary.at("heldout_accuracy");
  std::vector<pruner::LabelledText> heldout;
  for (std::size_t j = 0; j < corpus.heldout.size(); ++j)
    heldout.push_back({corpus.heldout_text[j], corpus.heldout_labels[j]});
  const auto reference = pruner::evaluate_classification(ckpt, heldout, 7, torch::kCPU);
  CATCH_CHECK(accuracy.at("examples") == corpus.heldout.size());
  CATCH_CHECK(accuracy.at("dense").get<double>() == Approx(reference.accuracy).margin(1e-12));
  CATCH_CHECK(accuracy.at("pruned").get<double>() >= 0);
  CATCH_CHECK(accuracy.at("pruned").get<double>() <= 1);
}

CATCH_TEST_CASE("labelled text: a checkpoint without a classifier or a bad label is refused", "[labels][cli]") {
  testing::Workspace w("labels-cli");
  const auto labels = w.dir / "labels.tsv";
  std::ofstream(labels) << "a fine film\t1\na dull film\t0\n";
  const auto out = (w.dir / "pruned").string();
  // The tiny model has no classifier head: one line naming it, exit 1, nothing written.
  CATCH_CHECK(testing::run_cli({"prune", w.model.string(), "--labels", labels.string(), "--target-sparsity", "0.25",
                                "--out", out}) == 1);
  CATCH_CHECK(testing::run_cli({"prune", w.model.string(), "--labels", labels.string(), "--data", w.corpus.string(),
                                "--target-sparsity", "0.25", "--out", out}) == 2);
  CATCH_CHECK(testing::run_cli({"prune", w.model.string(), "--labels", (w.dir / "missing.tsv").string(),
                                "--target-sparsity", "0.25", "--out", out}) == 1);
  CATCH_CHECK_FALSE(fs::exists(out));
  auto ckpt = models::load_checkpoint(testing::classifier_checkpoint(), torch::kCPU);
  std::ofstream(labels) << "a fine film\tpositive\na dull film\tbad\n";
  pruner::TrainingText text;
  text.labels = labels;
  CATCH_CHECK_THROWS_WITH(pruner::load_training_text(text, ckpt, {}), Catch::Contains("line 2") &&
                                                                           Catch::Contains("'bad'"));
  auto plain = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(pruner::load_training_text(text, plain, {}),
                          Catch::Contains("no classifier head") && Catch::Contains("--labels"));
}

CATCH_TEST_CASE("gates trained on labels are applied and refitted on their own labelled text",
                "[labels][cli][minilm]") {
  const auto model = testing::classifier_checkpoint().string();
  const auto dir = testing::temp_dir("labels-apply");
  const auto gates = (dir / "gates").string(), out = (dir / "pruned").string();
  CATCH_REQUIRE(testing::run_cli({"train-gates", model, "--labels", sst2_rows(96).string(), "--target-sparsity",
                                  "0.25", "--steps", "2", "--batch-size", "16", "--out", gates}) == 0);
  const auto recorded = models::read_json_file(fs::path(gates) / "gates.json")["settings"];
  CATCH_CHECK(recorded["corpus"].contains("labels"));
  CATCH_CHECK(recorded["label_weight"] == pruner::kDefaultLabelWeight);
  CATCH_REQUIRE(testing::run_cli({"apply", model, "--gates", gates, "--refit", "scale", "--out", out}) == 0);
  auto pruned = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(pruned.classifier);
  CATCH_CHECK(pruned.model->config().total_heads() == 54);
  CATCH_CHECK(models::read_json_file(fs::path(out) / "config.json")["headprune"]["record"]["refit"]["method"] ==
              "scale");
}
