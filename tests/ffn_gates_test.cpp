// Gates over heads and FFN neuron blocks under one FLOPs or parameter budget (issue 52, --prune
// heads,ffn): the budget is met within one unit's cost, gates.json records the FFN gates (format 2), apply
// removes exactly the closed blocks, and bad settings are refused by name with nothing written.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "models/flops.h"
#include "models/model_size.h"
#include "models/loader.h"
#include "pruner/records/gate_record.h"
#include "pruner/training/gate_units.h"
#include "pruner/report/report.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

/// The FFN widths a gates file keeps, per layer.
std::vector<int64_t> kept_widths(const pruner::GateState& state) {
  std::vector<int64_t> widths;
  for (const auto& layer : state.ffn) widths.push_back(layer.kept_width());
  return widths;
}

}  // namespace

CATCH_TEST_CASE("heads and FFN blocks share one FLOPs budget, and apply removes the closed blocks", "[ffn][cli]") {
  testing::Workspace w("ffn-gates");
  const auto gates_dir = w.dir / "g";
  CATCH_REQUIRE(testing::run_cli({"train-gates", w.model.string(), "--data", w.corpus.string(), "--prune", "heads,ffn",
                     "--ffn-block", "8", "--target-flops", "60%", "--max-length", "64", "--steps", "20",
                     "--min-heads-per-layer", "0", "-o", gates_dir.string()}) == 0);
  const auto file = nlohmann::json::parse(testing::read_text(gates_dir / "gates.json"));
  CATCH_CHECK(file["format_version"] == 2);
  CATCH_CHECK(file["settings"]["prune"] == "heads,ffn");
  CATCH_CHECK(file["settings"]["ffn_block"] == 8);
  const auto& summary = file["summary"];
  const double allowed = summary["target_flops_per_token"].get<double>();
  const double achieved = summary["achieved_flops_per_token"].get<double>();
  // One head of the tiny BERT at 64 tokens costs 8·H·d + 4·s·d = 4096 FLOPs per token, one block
  // of 8 neurons 2·2·H·8 = 1024: the mask stops within the dearer unit of the budget.
  CATCH_CHECK(achieved <= allowed);
  CATCH_CHECK(achieved > allowed - 4096);
  const auto state = pruner::GateState::load(gates_dir);
  CATCH_REQUIRE(state.ffn.size() == 2);
  CATCH_CHECK(state.ffn[0].width == 64);
  CATCH_CHECK(state.ffn[0].keep.size() == 8);
  const auto widths = kept_widths(state);
  CATCH_CHECK(std::any_of(widths.begin(), widths.end(), [](int64_t v) { return v < 64; }));  // the FFN was cut

  // apply: the pruned folder has those widths and the FLOPs the summary promised.
  const auto out = w.dir / "pruned";
  CATCH_REQUIRE(testing::run_cli({"apply", w.model.string(), "--gates", gates_dir.string(), "--out", out.string()}) == 0);
  const auto pruned = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(pruned.model->config().intermediate_sizes == widths);
  CATCH_CHECK(models::forward_flops_per_token(pruned.model->config(), 64) == Approx(achieved));
  // report shows the FFN widths, from the gates and from the pruned folder alike.
  for (const auto& dir : {gates_dir, out}) {
    const auto report = pruner::to_json(pruner::load_report(dir));
    CATCH_CHECK(report["ffn_widths"]["kept"] == widths);
    CATCH_CHECK(report["ffn_widths"]["original"] == std::vector<int64_t>{64, 64});
  }
  CATCH_CHECK(!pruner::to_json(pruner::load_report(w.model)).contains("ffn_widths"));  // nothing removed
  // The gates now cover more neurons than the pruned model has: refused, nothing written.
  CATCH_CHECK(testing::run_cli({"apply", out.string(), "--gates", gates_dir.string(), "--out", (w.dir / "again").string()}) == 1);
  CATCH_CHECK(!fs::exists(w.dir / "again"));
  // apply --refit output: each layer's attention block, then its FFN block, refit and recorded.
  const auto refit = w.dir / "refit";
  CATCH_REQUIRE(testing::run_cli({"apply", w.model.string(), "--gates", gates_dir.string(), "--refit", "output",
                                  "--out", refit.string()}) == 0);
  const auto layers = models::read_json_file(refit / "config.json")["headprune"]["record"]["refit"]["layers"];
  CATCH_REQUIRE(layers.size() == 4);
  CATCH_CHECK(layers[0]["block"] == "attention");
  CATCH_CHECK(layers[1]["block"] == "ffn");
  CATCH_CHECK(layers[1]["parameters"] == (widths[0] + 1) * 32);  // the FFN output projection: weight and bias
  CATCH_CHECK(models::load_checkpoint(refit, torch::kCPU).model->config().intermediate_sizes == widths);
}

CATCH_TEST_CASE("sublayer gates multiply their heads' and FFN blocks' gates", "[ffn][sublayers]") {
  pruner::GateUnits units;
  units.heads_per_layer = {2, 2};
  units.blocks_per_layer = {1, 1};
  units.ffn_block = 2;
  units.sublayers = true;
  // Gates: heads 0-3, blocks 4-5, then layer 0's and 1's attention (6, 7) and FFN (8, 9).
  CATCH_CHECK(units.per_group() == std::vector<int64_t>{2, 2, 1, 1, 2, 2});
  CATCH_CHECK(units.base_groups() == std::vector<int64_t>{2, 2, 1, 1});
  CATCH_CHECK(units.parents() == std::vector<int64_t>{6, 6, 7, 7, 8, 9});
  const auto values = torch::tensor({1.0, 0.5, 1.0, 1.0, 0.5, 1.0, 1.0, 0.0, 0.5, 1.0});
  const auto m = units.multipliers(values);
  CATCH_CHECK(torch::equal(m.heads.at(0), torch::tensor({1.0, 0.5})));
  CATCH_CHECK(torch::equal(m.heads.at(1), torch::tensor({0.0, 0.0})));  // layer 1's attention closed whole
  CATCH_CHECK(torch::equal(m.ffn.at(0), torch::tensor({0.25, 0.25})));  // block 0.5 x sublayer 0.5, per neuron
  CATCH_CHECK(torch::equal(m.ffn.at(1), torch::tensor({1.0, 1.0})));
}

CATCH_TEST_CASE("train-gates --prune heads,ffn,layers trains sublayer gates under the same FLOPs budget", "[ffn][sublayers][cli]") {
  testing::Workspace w("sublayer-gates");
  const auto gates_dir = w.dir / "g";
  const std::vector<std::string> base = {"train-gates", w.model.string(), "--data", w.corpus.string(), "--prune",
                                         "heads,ffn,layers", "--ffn-block", "8", "--target-flops", "60%",
                                         "--max-length", "64", "--steps", "20"};
  auto args = base;
  args.insert(args.end(), {"--min-heads-per-layer", "1", "-o", (w.dir / "x").string()});
  CATCH_CHECK(testing::run_cli(args) == 2);  // a kept minimum forbids closing an attention whole
  CATCH_CHECK(!fs::exists(w.dir / "x"));
  args = base;
  args.insert(args.end(), {"-o", gates_dir.string()});
  CATCH_REQUIRE(testing::run_cli(args) == 0);
  const auto file = nlohmann::json::parse(testing::read_text(gates_dir / "gates.json"));
  CATCH_CHECK(file["settings"]["prune"] == "heads,ffn,layers");
  const auto& summary = file["summary"];
  CATCH_CHECK(summary["achieved_flops_per_token"].get<double>() <= summary["target_flops_per_token"].get<double>());
  const auto& sublayers = summary["sublayer_gates"];
  CATCH_REQUIRE(sublayers["attention"]["log_alpha"].size() == 2);
  CATCH_REQUIRE(sublayers["ffn"]["prob_open"].size() == 2);
  // Each head's recorded log_alpha is its effective one: P(open) = its own gate's x its attention's.
  const auto state = pruner::GateState::load(gates_dir);
  for (std::size_t l = 0; l < 2; ++l) {
    const double parent = sublayers["attention"]["prob_open"][l].get<double>();
    CATCH_CHECK(parent > 0);
    for (double log_alpha : state.layers[l].log_alpha) {
      const double p = 1 / (1 + std::exp(-(log_alpha - (2.0 / 3.0) * std::log(0.1 / 1.1))));
      CATCH_CHECK(p <= parent + 1e-9);  // never more likely open than its sublayer
    }
  }
  const auto out = w.dir / "pruned";
  CATCH_REQUIRE(testing::run_cli({"apply", w.model.string(), "--gates", gates_dir.string(), "--out", out.string()}) == 0);
  const auto pruned = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(pruned.model->config().intermediate_sizes == kept_widths(state));
}

CATCH_TEST_CASE("heads and FFN blocks share one parameter budget", "[ffn][cli]") {
  testing::Workspace w("ffn-params");
  const auto gates_dir = w.dir / "g";
  CATCH_REQUIRE(testing::run_cli({"train-gates", w.model.string(), "--data", w.corpus.string(), "--prune", "heads,ffn",
                                  "--ffn-block", "8", "--target-params", "85%", "--max-length", "64", "--steps", "20",
                                  "--min-heads-per-layer", "0", "-o", gates_dir.string()}) == 0);
  const auto summary = nlohmann::json::parse(testing::read_text(gates_dir / "gates.json"))["summary"];
  const double allowed = summary["target_params"].get<double>();
  const auto achieved = summary["achieved_params"].get<int64_t>();
  // A head of the tiny BERT holds 4·H·d + 3·d = 1048 parameters, a block of 8 neurons
  // (2·H + 1)·8 = 520: the mask stops within the dearer unit of the budget.
  CATCH_CHECK(static_cast<double>(achieved) <= allowed);
  CATCH_CHECK(static_cast<double>(achieved) > allowed - 1048);
  const auto widths = kept_widths(pruner::GateState::load(gates_dir));
  CATCH_CHECK(std::any_of(widths.begin(), widths.end(), [](int64_t v) { return v < 64; }));
  // apply: the pruned folder holds exactly the parameters the summary promised.
  const auto out = w.dir / "pruned";
  CATCH_REQUIRE(testing::run_cli({"apply", w.model.string(), "--gates", gates_dir.string(), "--out", out.string()}) == 0);
  const auto pruned = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(pruned.model->config().intermediate_sizes == widths);
  CATCH_CHECK(models::parameter_count(*pruned.model) == achieved);
}

CATCH_TEST_CASE("prune kinds and FFN blocks that cannot be trained are refused, before anything is written", "[ffn][cli]") {
  testing::Workspace w("ffn-refusals");
  const auto out = (w.dir / "g").string();
  const std::vector<std::string> base = {"train-gates", w.model.string(), "--data", w.corpus.string(), "-o", out};
  const auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  };
  CATCH_CHECK(with({"--prune", "heads,ffn", "--target-sparsity", "0.5"}) == 2);  // heads only
  CATCH_CHECK(with({"--prune", "heads,ffn", "--l0-lambda", "0.1"}) == 2);  // no cost to weigh blocks by
  CATCH_CHECK(with({"--prune", "layers", "--target-flops", "60%"}) == 2);
  CATCH_CHECK(with({"--prune", "heads,layers", "--target-flops", "60%"}) == 2);  // sublayer gates need ffn
  CATCH_CHECK(with({"--prune", "heads,ffn,layers", "--target-sparsity", "0.5"}) == 2);
  CATCH_CHECK(with({"--prune", "heads,mlp", "--target-flops", "60%"}) == 2);
  CATCH_CHECK(with({"--prune", "ffn", "--target-flops", "60%"}) == 2);
  CATCH_CHECK(with({"--ffn-block", "8", "--target-flops", "60%"}) == 2);  // without --prune heads,ffn
  CATCH_CHECK(with({"--prune", "heads,ffn", "--target-flops", "60%", "--uniform-layers"}) == 2);
  CATCH_CHECK(with({"--prune", "heads,ffn", "--target-flops", "60%", "--ffn-block", "7"}) == 1);  // 64 % 7
  CATCH_CHECK(!fs::exists(out));
}

CATCH_TEST_CASE("gates.json keeps FFN gates and refuses inconsistent ones", "[ffn]") {
  pruner::FfnLayerGates layer;
  layer.width = 6;
  layer.block = 2;
  layer.log_alpha = {1.0, -2.0, 3.0};
  layer.gate = {0.5, 0.0, 1.0};
  layer.keep = {true, false, true};
  CATCH_CHECK(layer.kept_width() == 4);
  CATCH_CHECK(layer.removed_neurons() == std::vector<int64_t>{2, 3});
  CATCH_CHECK(layer.neuron_gates() == std::vector<double>{0.5, 0.5, 0.0, 0.0, 1.0, 1.0});

  pruner::GateState state;
  state.model.model_type = "bert";
  state.model.num_hidden_layers = 1;
  state.model.num_attention_heads = 2;
  state.layers = {pruner::LayerGates{{0, 1}, {1.0, 2.0}, {1.0, 1.0}, {true, true}}};
  CATCH_CHECK(state.to_json()["format_version"] == 1);  // heads only: readable by every earlier headprune
  state.ffn = {layer};
  const auto j = state.to_json();
  CATCH_CHECK(j["format_version"] == 2);
  const auto back = pruner::GateState::from_json(j, "g.json");
  CATCH_REQUIRE(back.ffn.size() == 1);
  CATCH_CHECK(back.ffn[0].keep == layer.keep);
  CATCH_CHECK(back.ffn[0].log_alpha == layer.log_alpha);
  auto bad = j;
  bad["ffn"][0]["width"] = 7;
  CATCH_CHECK_THROWS_WITH(pruner::GateState::from_json(bad, "g.json"), Catch::Contains("ffn layer 0 has width 7"));
  bad = j;
  bad["ffn"] = nlohmann::json::array();
  CATCH_CHECK_THROWS_WITH(pruner::GateState::from_json(bad, "g.json"), Catch::Contains("0 ffn layers listed"));
}

CATCH_TEST_CASE("apply --remove-ffn removes the named FFN neurons, with or without heads", "[ffn][cli]") {
  testing::Workspace w("remove-ffn");
  const auto out = w.dir / "p";
  CATCH_REQUIRE(testing::run_cli({"apply", w.model.string(), "--remove-ffn", R"({"0": [0, 5, 63], "1": [1]})",
                                  "--remove-heads", R"({"1": [0]})", "--out", out.string()}) == 0);
  const auto pruned = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(pruned.model->config().intermediate_sizes == std::vector<int64_t>{61, 63});
  CATCH_CHECK(pruned.model->config().heads_per_layer() == std::vector<int64_t>{4, 3});
  const auto refused = [&](const std::string& spec) {
    return testing::run_cli({"apply", w.model.string(), "--remove-ffn", spec, "--out", (w.dir / "x").string()});
  };
  CATCH_CHECK(refused(R"({"0": [64]})") == 1);   // out of range
  CATCH_CHECK(refused(R"({"0": [3, 3]})") == 1);  // twice
  CATCH_CHECK(refused(R"({"2": [0]})") == 1);    // no layer 2
  CATCH_CHECK(refused(R"({"0": [)") == 2);       // not JSON
  CATCH_CHECK(testing::run_cli({"apply", w.model.string(), "--remove-ffn", R"({"0": [1]})", "--gates",
                                (w.dir / "g").string(), "--out", (w.dir / "x").string()}) == 2);
  CATCH_CHECK(!fs::exists(w.dir / "x"));
}
