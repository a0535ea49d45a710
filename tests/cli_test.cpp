// The command line end to end on a tiny model: exit codes, every stage of `prune`, and the
// artefacts each stage leaves.
#include <algorithm>
#include <fstream>
#include <set>

#include <onnx/onnx_pb.h>

#include "models/config.h"
#include "models/head_costs.h"
#include "models/flops.h"
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/analysis/head_importance.h"
#include "pruner/jobs/importance_baseline.h"
#include "pruner/objectives/distillation.h"
#include "pruner/report/report.h"
#include "pruner/text/corpus.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

int run(std::vector<std::string> args) { return testing::run_cli(std::move(args)); }

/// A short sweep of the workspace model at 25% and 50% without benchmark: `--out` followed by `extra`.
std::vector<std::string> baseline_sweep(const testing::Workspace& w, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"sweep", w.model.string(), "--data", w.corpus.string(), "--targets", "0.25,0.5",
                                   "--steps", "4", "--batch-size", "8", "--max-length", "32", "--no-bench", "--out"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// What sweep's baselines score on, read independently: the first kImportanceSequences of the
/// workspace corpus's training share at --max-length 32.
std::vector<std::vector<int64_t>> scored_sequences(const testing::Workspace& w, const models::Checkpoint& ckpt) {
  pruner::CorpusOptions co;
  co.max_length = 32;
  const auto corpus = pruner::load_corpus({w.corpus}, *ckpt.tokenizer, co);
  const auto n = std::min(pruner::kImportanceSequences, corpus.train.size());
  return {corpus.train.begin(), corpus.train.begin() + static_cast<std::ptrdiff_t>(n)};
}

}  // namespace

CATCH_TEST_CASE("exit codes: 0 ok, 1 error, 2 usage", "[cli]") {
  testing::Workspace w("cli");
  CATCH_CHECK(run({"--help"}) == 0);
  CATCH_CHECK(run({"inspect", "--help"}) == 0);
  CATCH_CHECK(run({}) == 2);
  CATCH_CHECK(run({"frobnicate"}) == 2);
  CATCH_CHECK(run({"inspect", w.model.string(), "--no-such-flag"}) == 2);
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--out", (w.dir / "g").string()}) == 2);
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-sparsity", "0.5",
                   "--l0-lambda", "0.1", "--out", (w.dir / "g").string()}) == 2);
  CATCH_CHECK(run({"bench", w.model.string(), w.model.string(), "--batch", "1,x"}) == 2);
  CATCH_CHECK(run({"inspect", (w.dir / "missing").string()}) == 1);
  CATCH_CHECK(run({"inspect", w.model.string(), "--device", "tpu"}) == 2);
  CATCH_CHECK(run({"inspect", w.model.string()}) == 0);
  // An impossible target is refused before anything is written.
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-sparsity", "0.9",
                   "--out", (w.dir / "g").string()}) == 1);
  CATCH_CHECK_FALSE(fs::exists(w.dir / "g" / "gates.json"));
}

CATCH_TEST_CASE("a malformed checkpoint gives an error naming the problem", "[cli][errors]") {
  testing::Workspace w("cli");
  std::ofstream(w.model / "config.json") << R"({"model_type": "bert", "hidden_size": 32})";
  CATCH_CHECK(run({"inspect", w.model.string()}) == 1);
  CATCH_REQUIRE_THROWS_WITH(models::read_config_file(w.model), Catch::Contains("'vocab_size' is missing"));
  std::ofstream(w.model / "config.json") << "{not json";
  CATCH_REQUIRE_THROWS_WITH(models::read_config_file(w.model), Catch::Contains("not valid JSON"));
}

CATCH_TEST_CASE("train-gates, report and apply work as two halves", "[cli]") {
  testing::Workspace w("cli");
  const auto gates = w.dir / "gates";
  CATCH_REQUIRE(run({"--threads", "1", "train-gates", w.model.string(), "--data", w.corpus.string(),
                     "--target-sparsity", "0.25", "--steps", "12", "--batch-size", "8", "--max-length", "32",
                     "--out", gates.string(), "--log-every", "4"}) == 0);
  auto report = pruner::load_report(gates);
  CATCH_CHECK(report.heads_kept() == 6);
  // A second run into the same folder must not clobber it.
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-sparsity", "0.25",
                   "--steps", "2", "--out", gates.string()}) == 1);
  const auto out = w.dir / "pruned";
  CATCH_REQUIRE(run({"apply", w.model.string(), "--gates", gates.string(), "--out", out.string()}) == 0);
  CATCH_CHECK(pruner::load_report(out).heads_kept() == 6);
  CATCH_CHECK(run({"report", out.string(), "--svg", (w.dir / "heads.svg").string()}) == 0);
  CATCH_CHECK(fs::file_size(w.dir / "heads.svg") > 500);
  // Gates from this model do not fit the pruned one; nothing is written.
  CATCH_CHECK(run({"apply", out.string(), "--gates", gates.string(), "--out", (w.dir / "again").string()}) == 1);
  CATCH_CHECK_FALSE(fs::exists(w.dir / "again"));
  // Existing output without --force
  CATCH_CHECK(run({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--out", out.string()}) == 1);
  CATCH_CHECK(run({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--out", out.string(), "--force"}) == 0);
  CATCH_CHECK(run({"apply", w.model.string(), "--remove-heads", "{0: [1]}", "--out", (w.dir / "x").string()}) == 2);
  // --refit: on the gates' own training text (read again from their record); it needs --gates
  // and a method it knows.
  const auto refit = w.dir / "refit";
  CATCH_CHECK(run({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--refit", "scale",
                   "--out", refit.string()}) == 2);
  CATCH_CHECK(run({"apply", w.model.string(), "--gates", gates.string(), "--refit", "lsq", "--out", refit.string()}) == 2);
  CATCH_CHECK(run({"apply", w.model.string(), "--gates", gates.string(), "--refit-ridge", "0.1", "--out",
                   refit.string()}) == 2);  // no method: the setting would do nothing
  CATCH_CHECK_FALSE(fs::exists(refit));
  CATCH_REQUIRE(run({"apply", w.model.string(), "--gates", gates.string(), "--refit", "scale", "--out", refit.string()}) == 0);
  const auto recorded = models::read_json_file(refit / "config.json")["headprune"]["record"]["refit"];
  CATCH_CHECK(recorded["method"] == "scale");
  CATCH_CHECK(recorded["sequences"].get<int>() == 72);  // the training share of 80 documents
  CATCH_CHECK(recorded["layers"].size() == 2);
}

CATCH_TEST_CASE("prune runs every stage and leaves every artefact", "[cli][e2e]") {
  testing::Workspace w("cli");
  const auto out = w.dir / "pruned";
  CATCH_REQUIRE(run({"prune", w.model.string(), "--data", w.corpus.string(), "--target-sparsity", "0.5",
                     "--steps", "16", "--batch-size", "8", "--max-length", "32", "--out", out.string(),
                     "--bench-batch", "2", "--bench-seq", "16,32", "--onnx"}) == 0);
  for (const auto* f : {"config.json", "model.safetensors", "vocab.txt", "headprune/gates.json",
                        "headprune/train_log.jsonl", "headprune/report.txt", "headprune/report.json",
                        "headprune/heads.svg", "headprune/bench.json", "headprune/summary.json",
                        "onnx/model.onnx"})
    CATCH_CHECK(fs::exists(out / f));
  // --onnx: the pruned model (4 heads left), not the dense one.
  onnx::ModelProto onnx_model;
  CATCH_REQUIRE(onnx_model.ParseFromString(testing::read_text(out / "onnx/model.onnx")));
  int64_t query_columns = 0;
  for (const auto& init : onnx_model.graph().initializer())
    if (init.name().find("attention.self.query.weight") != std::string::npos) query_columns += init.dims(1);
  CATCH_CHECK(query_columns == 4 * models::read_config_file(out).head_dim);
  const auto summary = models::read_json_file(out / "headprune/summary.json");
  CATCH_CHECK(summary["heads_kept"] == 4);
  CATCH_CHECK(summary["bench"]["results"].size() == 2);
  // The text's profile: 72 training sequences of the 80 documents, too few: warned.
  CATCH_CHECK(summary["text"]["train_sequences"] == 72);
  CATCH_CHECK_THAT(summary["text"]["warnings"][0].get<std::string>(), Catch::Contains("short: 72 training"));
  // Direction and consistency, not timing: the pruned model does fewer FLOPs, and the speedup
  // reported is the ratio of the medians it reports.
  for (const auto& cell : summary["bench"]["results"]) {
    CATCH_CHECK(cell["flops_ratio"].get<double>() > 1.0);
    CATCH_CHECK(cell["speedup"].get<double>() ==
                Approx(cell["dense_ms"]["median"].get<double>() / cell["pruned_ms"]["median"].get<double>()).epsilon(1e-9));
  }
  // 80 documents, 10% held out.
  CATCH_CHECK(summary["fidelity"]["sequences"].get<int>() == 8);
  const auto report = models::read_json_file(out / "headprune/report.json");
  CATCH_CHECK(report["heads_kept"] == 4);
  CATCH_CHECK(models::read_config_file(out).total_heads() == 4);
  CATCH_CHECK(fs::file_size(out / "headprune/train_log.jsonl") > 0);
  // The gate work folder is gone, and no temporary folder is left beside the output.
  for (const auto& e : fs::directory_iterator(w.dir)) CATCH_CHECK(e.path().filename().string()[0] != '.');
}

CATCH_TEST_CASE("sweep prunes at every target and plots quality against speed", "[cli][e2e]") {
  testing::Workspace w("cli");
  const auto out = w.dir / "sweep";
  CATCH_REQUIRE(run({"sweep", w.model.string(), "--data", w.corpus.string(), "--targets", "0.25,0.5",
                     "--steps", "8", "--batch-size", "8", "--max-length", "32", "--out", out.string(),
                     "--bench-batch", "2", "--bench-seq", "16"}) == 0);
  const auto sweep = models::read_json_file(out / "sweep.json");
  CATCH_REQUIRE(sweep["points"].size() == 2);
  CATCH_CHECK(sweep["points"][0]["heads_kept"] == 6);
  CATCH_CHECK(sweep["points"][1]["heads_kept"] == 4);
  // Removing more heads removes more FLOPs.
  CATCH_CHECK(sweep["points"][0]["flops_ratio"].get<double>() > 1.0);
  CATCH_CHECK(sweep["points"][1]["flops_ratio"].get<double>() > sweep["points"][0]["flops_ratio"].get<double>());
  CATCH_CHECK(fs::exists(out / "target-25" / "model.safetensors"));
  CATCH_CHECK(fs::exists(out / "target-50" / "headprune" / "summary.json"));
  CATCH_CHECK(fs::file_size(out / "sweep.svg") > 500);
  CATCH_CHECK(fs::exists(out / "sweep.txt"));
  // A target the model cannot reach is refused before any training.
  CATCH_CHECK(run({"sweep", w.model.string(), "--data", w.corpus.string(), "--targets", "0.5,0.95",
                   "--out", (w.dir / "bad").string()}) == 1);
  CATCH_CHECK_FALSE(fs::exists(w.dir / "bad" / "target-50"));
}

CATCH_TEST_CASE("sweep --one-run trains once and writes nested sizes", "[cli][e2e]") {
  testing::Workspace w("cli");
  const auto out = w.dir / "sweep";
  const std::vector<std::string> common = {"sweep", w.model.string(), "--data", w.corpus.string(), "--targets",
                                           "0.25,0.5,0.75", "--steps", "8", "--batch-size", "8", "--max-length",
                                           "32", "--no-bench", "--one-run", "--out"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  CATCH_CHECK(run(with({(w.dir / "tw").string(), "--train-weights"})) == 2);
  CATCH_CHECK_FALSE(fs::exists(w.dir / "tw"));
  CATCH_REQUIRE(run(with({out.string()})) == 0);
  const auto sweep = models::read_json_file(out / "sweep.json");
  CATCH_CHECK(sweep["one_run"]["trained_at"] == 0.5);
  CATCH_REQUIRE(sweep["points"].size() == 3);
  // 8 heads: 6, 4, 2 kept, each set inside the one before; one training log for all three.
  std::vector<std::set<std::pair<int64_t, int64_t>>> kept;
  for (const auto* folder : {"target-25", "target-50", "target-75"}) {
    const auto config = models::read_config_file(out / folder);
    std::set<std::pair<int64_t, int64_t>> heads;
    for (int64_t l = 0; l < config.num_hidden_layers; ++l)
      for (auto h : config.kept_heads[static_cast<std::size_t>(l)]) heads.insert({l, h});
    kept.push_back(heads);
    CATCH_CHECK(testing::read_text(out / folder / "headprune/train_log.jsonl") ==
                testing::read_text(out / "target-50/headprune/train_log.jsonl"));
  }
  CATCH_CHECK(kept[0].size() == 6);
  CATCH_CHECK(kept[1].size() == 4);
  CATCH_CHECK(kept[2].size() == 2);
  CATCH_CHECK(std::includes(kept[0].begin(), kept[0].end(), kept[1].begin(), kept[1].end()));
  CATCH_CHECK(std::includes(kept[1].begin(), kept[1].end(), kept[2].begin(), kept[2].end()));
  const auto gates = models::read_json_file(out / "target-25/headprune/gates.json");
  CATCH_CHECK(gates["summary"]["one_run"]["trained_at"] == 0.5);
}

CATCH_TEST_CASE("sweep --baselines importance removes the least important heads, untrained", "[cli][e2e]") {
  testing::Workspace w("cli");
  const auto out = w.dir / "sweep";
  auto with = [&](const std::vector<std::string>& extra) { return baseline_sweep(w, extra); };
  CATCH_CHECK(run(with({(w.dir / "bad").string(), "--baselines", "random"})) == 2);
  CATCH_CHECK_FALSE(fs::exists(w.dir / "bad"));
  CATCH_REQUIRE(run(with({out.string(), "--baselines", "importance"})) == 0);
  const auto sweep = models::read_json_file(out / "sweep.json");
  const auto& baseline = sweep["baselines"]["importance"];
  CATCH_REQUIRE(baseline["points"].size() == 2);
  CATCH_CHECK(baseline["points"][0]["heads_kept"] == 6);
  CATCH_CHECK(baseline["points"][1]["heads_kept"] == 4);
  CATCH_CHECK(testing::read_text(out / "sweep.svg").find(">I2<") != std::string::npos);
  CATCH_CHECK(testing::read_text(out / "sweep.txt").find("ablation importance") != std::string::npos);
  // The removed heads are the lowest of the importance measured independently on the same text
  // (the training share's first sequences, as the sweep read it).
  auto ckpt = models::load_checkpoint(w.model, torch::kCPU);
  const auto importance = pruner::ablation_importance(ckpt, scored_sequences(w, ckpt), 8, torch::kCPU);
  std::vector<std::pair<double, std::pair<int64_t, int64_t>>> ranked;
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 4; ++h) ranked.push_back({importance[l][h], {l, h}});
  std::sort(ranked.begin(), ranked.end());
  const auto config = models::read_config_file(out / "importance-25");
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto [l, h] = ranked[i].second;
    const auto& kept = config.kept_heads[static_cast<std::size_t>(l)];
    CATCH_CHECK((std::find(kept.begin(), kept.end(), h) == kept.end()) == (i < 2));
  }
  CATCH_CHECK(models::read_json_file(out / "importance-25/headprune/gates.json")["summary"]["baseline"] ==
              "importance");
}

CATCH_TEST_CASE("sweep --prune heads,ffn trains to FLOPs targets, against heads alone at the same budgets",
                "[cli][e2e][ffn]") {
  testing::Workspace w("cli-ffn");
  const auto out = w.dir / "sweep";
  auto with = [&](const fs::path& dir, std::vector<std::string> extra) {
    auto args = baseline_sweep(w, {dir.string(), "--ffn-block", "8"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const auto bad = w.dir / "bad";
  CATCH_CHECK(run(with(bad, {"--baselines", "heads"})) == 2);  // nothing to compare heads alone with
  CATCH_CHECK(run(with(bad, {"--prune", "heads,ffn", "--baselines", "importance"})) == 2);  // a fraction of heads
  CATCH_CHECK(run(with(bad, {"--prune", "heads,ffn", "--one-run"})) == 2);
  CATCH_CHECK(run(with(bad, {"--prune", "heads,ffn", "--baselines", "ffn"})) == 2);  // no sublayer gates to compare
  CATCH_CHECK_FALSE(fs::exists(bad));
  CATCH_REQUIRE(run(with(out, {"--prune", "heads,ffn", "--baselines", "heads"})) == 0);
  const auto sweep = models::read_json_file(out / "sweep.json");
  CATCH_CHECK(sweep["target_unit"] == "flops");
  const double dense_flops = models::forward_flops_per_token(models::read_config_file(w.model), 32);
  for (const auto* folder : {"target-25", "target-50"}) {  // each within its share of the dense FLOPs
    const double share = std::string(folder) == "target-25" ? 0.75 : 0.5;
    CATCH_CHECK(models::forward_flops_per_token(models::read_config_file(out / folder), 32) <= share * dense_flops);
  }
  const auto& cut = sweep["points"][1]["ffn_widths"];
  CATCH_CHECK(cut[0].get<int64_t>() + cut[1].get<int64_t>() < 128);
  // Heads alone: a quarter of the FLOPs is reachable (the FFNs untouched); half is not, and says why.
  const auto& heads = sweep["baselines"]["heads"]["points"];
  CATCH_REQUIRE(heads.size() == 2);
  CATCH_CHECK(heads[0]["ffn_widths"] == std::vector<int64_t>{64, 64});
  CATCH_CHECK(models::forward_flops_per_token(models::read_config_file(out / "heads-25"), 32) <= 0.75 * dense_flops);
  CATCH_CHECK(heads[1]["unreachable"].get<std::string>().find("remain with every head") != std::string::npos);
  CATCH_CHECK_FALSE(fs::exists(out / "heads-50"));
  const auto table = testing::read_text(out / "sweep.txt");
  CATCH_CHECK(table.find("FFN kept") != std::string::npos);
  CATCH_CHECK(table.find("unreachable") != std::string::npos);
  CATCH_CHECK(testing::read_text(out / "sweep.svg").find(">H1<") != std::string::npos);
}

CATCH_TEST_CASE("sweep --prune heads,ffn,layers against heads and FFN blocks alone at the same FLOPs budgets",
                "[cli][e2e][ffn][sublayers]") {
  testing::Workspace w("cli-sublayers");
  const auto out = w.dir / "sweep";
  CATCH_REQUIRE(run(baseline_sweep(w, {out.string(), "--ffn-block", "8", "--prune", "heads,ffn,layers", "--baselines",
                                       "ffn"})) == 0);
  const auto sweep = models::read_json_file(out / "sweep.json");
  const double dense_flops = models::forward_flops_per_token(models::read_config_file(w.model), 32);
  const auto& ffn = sweep["baselines"]["ffn"]["points"];
  CATCH_REQUIRE(ffn.size() == 2);
  for (const auto* folder : {"target-50", "ffn-50"})
    CATCH_CHECK(models::forward_flops_per_token(models::read_config_file(out / folder), 32) <= 0.5 * dense_flops);
  // The baseline runs as prune would without sublayer gates: each layer keeps a head and a block.
  for (const auto& point : ffn) {
    for (auto heads : point["heads_per_layer"].get<std::vector<int64_t>>()) CATCH_CHECK(heads >= 1);
    for (auto width : point.value("ffn_widths", std::vector<int64_t>{})) CATCH_CHECK(width >= 8);
  }
  CATCH_CHECK(models::read_json_file(out / "ffn-50" / "headprune" / "gates.json")["settings"]["prune"] == "heads,ffn");
  CATCH_CHECK(models::read_json_file(out / "target-50" / "headprune" / "gates.json")["settings"]["prune"] ==
              "heads,ffn,layers");
  CATCH_CHECK(testing::read_text(out / "sweep.svg").find(">F1<") != std::string::npos);
}

CATCH_TEST_CASE("sweep --baselines layers removes the layer the dense model misses least", "[cli][e2e][layers]") {
  testing::Workspace w("cli-layers");
  const auto out = w.dir / "sweep";
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--baselines", "layers"});
    return baseline_sweep(w, extra);
  };
  CATCH_CHECK(run(with({(w.dir / "bad").string(), "--refit", "scale"})) == 2);
  CATCH_CHECK(run(with({(w.dir / "bad").string(), "--rearrange"})) == 2);
  CATCH_CHECK_FALSE(fs::exists(w.dir / "bad"));
  // Every model, the baseline's too, is scored on STS once written (pairs of the corpus's own sentences).
  std::ofstream(w.dir / "sts.csv") << "sentence1,sentence2,score\n"
                                      "the cat sat on the mat.,the cat sat on the mat.,5\n"
                                      "the cat sat on the mat.,knowledge is power.,0\n"
                                      "all that glitters is not gold.,the early bird catches the worm.,1\n"
                                      "time and tide wait for no man.,actions speak louder than words.,2\n";
  CATCH_REQUIRE(run(with({out.string(), "--sts", (w.dir / "sts.csv").string()})) == 0);
  const auto sweep = models::read_json_file(out / "sweep.json");
  const auto& baseline = sweep["baselines"]["layers"];
  // Two layers: both targets mean one layer removed, measured once.
  CATCH_REQUIRE(baseline["points"].size() == 1);
  CATCH_CHECK(baseline["points"][0]["heads_kept"] == 4);
  CATCH_CHECK(testing::read_text(out / "sweep.svg").find(">L1<") != std::string::npos);
  CATCH_CHECK(testing::read_text(out / "sweep.txt").find("whole layers removed") != std::string::npos);
  // The removed layer is the one whose removal alone gives the lower distillation loss,
  // measured here on the same sequences (the training share's first ones).
  auto dense = models::load_checkpoint(w.model, torch::kCPU);
  const auto sequences = scored_sequences(w, dense);
  torch::NoGradGuard no_grad;
  std::vector<double> loss(2, 0.0);
  for (int64_t l = 0; l < 2; ++l) {
    auto shallow = models::load_checkpoint(w.model, torch::kCPU);
    shallow.model->drop_layers({l});
    for (const auto& bucket : pruner::length_buckets(sequences, 8)) {
      const auto in = pruner::make_inputs(sequences, bucket, dense.tokenizer->pad_id(), torch::kCPU);
      const auto target = pruner::distillation_target(dense.model->forward(in, nullptr));
      loss[static_cast<std::size_t>(l)] +=
          pruner::distillation(shallow.model->forward(in, nullptr), target, in.attention_mask, dense.pooling, 1.0)
              .total.item<double>() *
          static_cast<double>(bucket.size()) / static_cast<double>(sequences.size());
    }
  }
  const int64_t expected = loss[0] < loss[1] ? 0 : 1;
  CATCH_CHECK(baseline["points"][0]["layers_removed"] == nlohmann::json({expected}));
  CATCH_CHECK(baseline["order"][0]["loss"].get<double>() ==
              Approx(loss[static_cast<std::size_t>(expected)]).epsilon(1e-5));
  const auto exported = models::read_config_file(out / "layers-25");
  CATCH_CHECK(exported.num_hidden_layers == 1);
  const auto summary = models::read_json_file(out / "layers-25/headprune/summary.json");
  CATCH_CHECK(summary["baseline"] == "layers");
  CATCH_CHECK(summary["apply"]["layers_removed"] == nlohmann::json({expected}));
}

CATCH_TEST_CASE("budgets in parameters and FLOPs are met, within one head of them", "[cli][budget]") {
  testing::Workspace w("budget");
  const auto ckpt = models::load_checkpoint(w.model, torch::kCPU);
  int64_t total = 0;
  for (const auto& p : ckpt.model->parameters()) total += p.numel();
  // One head of the tiny BERT (hidden 32, head size 8): Q, K, V rows + biases and O columns.
  const int64_t per_head = 4 * 32 * 8 + 3 * 8;
  const auto out = w.dir / "g";
  for (const auto& budget : {std::to_string(total - 2500), std::string("90%")}) {
    CATCH_REQUIRE(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-params", budget,
                       "--steps", "20", "--min-heads-per-layer", "0", "-o", out.string(), "--force"}) == 0);
    const auto summary = nlohmann::json::parse(testing::read_text(out / "gates.json"))["summary"];
    const double allowed = summary["target_params"].get<double>();
    const auto achieved = summary["achieved_params"].get<int64_t>();
    CATCH_INFO("budget " << budget << ": allowed " << allowed << ", achieved " << achieved);
    CATCH_CHECK(static_cast<double>(achieved) <= allowed);
    CATCH_CHECK(static_cast<double>(achieved) > allowed - static_cast<double>(per_head));
  }
  // FLOPs per token at --max-length: within the budget and within one head's FLOPs of it.
  const double head_flops = models::head_costs(ckpt.model->config(), 64).flops_per_head(ckpt.model->config());
  CATCH_REQUIRE(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-flops", "90%",
                     "--max-length", "64", "--steps", "20", "--min-heads-per-layer", "0", "-o", out.string(),
                     "--force"}) == 0);
  const auto summary = nlohmann::json::parse(testing::read_text(out / "gates.json"))["summary"];
  CATCH_CHECK(summary["achieved_flops_per_token"].get<double>() <= summary["target_flops_per_token"].get<double>());
  CATCH_CHECK(summary["achieved_flops_per_token"].get<double>() > summary["target_flops_per_token"].get<double>() - head_flops);
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-flops", "0.9",
                   "-o", out.string()}) == 2);
  // A budget the dense model meets, one below every head removed, and a malformed one.
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-params",
                   std::to_string(total), "-o", out.string(), "--force"}) == 1);
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-params", "1000",
                   "-o", out.string(), "--force"}) == 1);
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-params", "12 heads",
                   "-o", out.string()}) == 2);
  CATCH_CHECK(run({"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-params", "90%",
                   "--target-sparsity", "0.5", "-o", out.string()}) == 2);
}
