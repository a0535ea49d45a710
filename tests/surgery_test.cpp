// Physical head removal and export on the real all-MiniLM-L6-v2 (issue 4).
// Tolerances: gated (0/1 or fractional gates) vs pruned within the float32 rounding bound of
// tests/tolerance.h; exported folder vs
// in-memory pruned model: exactly equal.
#include <fstream>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/inputs.h"
#include "models/loader.h"
#include "models/tokenizer/wordpiece.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/export.h"
#include "pruner/surgery/surgery.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace {

/// Real sentences (the reference fixture's texts), as one padded batch.
models::ModelInputs minilm_batch(const models::Checkpoint& ckpt) {
  auto cases = models::read_json_file(testing::fixture_path("minilm/tokens.json"))["cases"];
  std::vector<std::string> texts;
  for (size_t i = 0; i < 24 && i < cases.size(); ++i) texts.push_back(cases[i]["text"]);
  const auto& wordpiece = dynamic_cast<const models::WordPieceTokenizer&>(*ckpt.tokenizer);
  return models::to_model_inputs(wordpiece.encode_batch(texts, 128), torch::kCPU);
}

torch::Tensor masked(const torch::Tensor& hidden, const models::ModelInputs& in) {
  return hidden * in.attention_mask.unsqueeze(-1).to(hidden.dtype());
}

}  // namespace

CATCH_TEST_CASE("0/1 gates and physical removal agree on real sentences", "[surgery][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  auto in = minilm_batch(ckpt);
  auto plan = pruner::plan_from_remove_heads(testing::kUnevenRemoval, ckpt.model->config());
  auto multipliers = pruner::plan_multipliers(plan, ckpt.model->config(), torch::kCPU);
  torch::NoGradGuard no_grad;
  auto gated = ckpt.model->forward(in, &multipliers).last_hidden_state;
  auto dense = ckpt.model->forward(in, nullptr).last_hidden_state;
  pruner::apply_plan(*ckpt.model, plan);
  CATCH_CHECK(ckpt.model->config().heads_per_layer() == std::vector<int64_t>{9, 11, 0, 7, 12, 11});
  auto pruned = ckpt.model->forward(in, nullptr).last_hidden_state;
  const double tol = testing::float32_tolerance(ckpt.model->config(), masked(dense, in));
  CATCH_CHECK((masked(gated, in) - masked(pruned, in)).abs().max().item<double>() <= tol);
  // The removed heads mattered far beyond rounding: the check above can fail.
  CATCH_CHECK((masked(dense, in) - masked(pruned, in)).abs().max().item<double>() > 10 * tol);
}

CATCH_TEST_CASE("fractional gates fold into the output projection", "[surgery][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  auto in = minilm_batch(ckpt);
  pruner::PrunePlan plan(6);
  for (int64_t l = 0; l < 6; ++l) {
    plan[l].scale = torch::linspace(0.2, 1.0, 12);
    plan[l].remove_local = {l, (l + 5) % 12};
  }
  auto multipliers = pruner::plan_multipliers(plan, ckpt.model->config(), torch::kCPU);
  torch::NoGradGuard no_grad;
  auto gated = ckpt.model->forward(in, &multipliers).last_hidden_state;
  pruner::apply_plan(*ckpt.model, plan);
  auto pruned = ckpt.model->forward(in, nullptr).last_hidden_state;
  CATCH_CHECK((masked(gated, in) - masked(pruned, in)).abs().max().item<double>() <=
              testing::float32_tolerance(ckpt.model->config(), masked(gated, in)));
}

CATCH_TEST_CASE("export reloads exactly, shrinks by the removed heads, and can be pruned again",
                "[surgery][export][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  auto in = minilm_batch(ckpt);
  auto out = testing::temp_dir("export") / "pruned";
  auto plan = pruner::plan_from_remove_heads(testing::kUnevenRemoval, ckpt.model->config());
  auto result = pruner::apply_and_export(ckpt, plan, out, false, {{"test", true}}, torch::kCPU);
  CATCH_CHECK(result.heads_before - result.heads_after == 22);
  CATCH_CHECK(result.params_before - result.params_after == 22 * (4 * 384 * 32 + 3 * 32));
  // The tensor data shrinks by exactly the removed parameters' float32 bytes; the JSON header
  // differs only by its own length.
  // (`embeddings.position_ids`, a constant buffer the model does not use, is carried through.)
  CATCH_CHECK(testing::safetensors_data_bytes(testing::minilm_dir() / "model.safetensors") -
                  testing::safetensors_data_bytes(out / "model.safetensors") ==
              4 * 22 * (4 * 384 * 32 + 3 * 32));
  CATCH_CHECK(result.exported.warnings.size() == 1);  // layer 2 has no heads: older transformers cannot load it
  for (const auto* f : {"config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "modules.json",
                        "1_Pooling/config.json", "sentence_bert_config.json"})
    CATCH_CHECK(std::filesystem::exists(out / f));

  // transformers 5's route: headprune's modelling file, registered in auto_map, byte for byte
  // the repository's models/bert/modeling_headprune_bert.py (tools/check_interop.py runs it).
  const auto cfg_written = models::read_json_file(out / "config.json");
  CATCH_CHECK(cfg_written["auto_map"]["AutoModel"] == "modeling_headprune_bert.HeadpruneBertModel");
  CATCH_CHECK(testing::read_text(out / "modeling_headprune_bert.py") ==
              testing::read_text(testing::source_dir() / "models/bert/modeling_headprune_bert.py"));

  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  torch::NoGradGuard no_grad;
  CATCH_CHECK(torch::equal(ckpt.model->forward(in, nullptr).last_hidden_state,
                           reloaded.model->forward(in, nullptr).last_hidden_state));
  auto cfg = models::read_json_file(out / "config.json");
  CATCH_CHECK(cfg["pruned_heads"]["0"] == nlohmann::json({0, 1, 2}));
  CATCH_CHECK(cfg["headprune"]["layers"][3]["kept"] == nlohmann::json({0, 2, 4, 6, 8, 10, 11}));

  // Prune the pruned model again: pruned_heads accumulates original indices.
  auto again = pruner::plan_from_remove_heads({{"0", {3}}, {"3", {0}}}, reloaded.model->config());
  auto out2 = out.parent_path() / "pruned-again";
  pruner::apply_and_export(reloaded, again, out2, false, {}, torch::kCPU);
  auto cfg2 = models::read_json_file(out2 / "config.json");
  CATCH_CHECK(cfg2["pruned_heads"]["0"] == nlohmann::json({0, 1, 2, 3}));
  CATCH_CHECK(cfg2["pruned_heads"]["3"] == nlohmann::json({0, 1, 3, 5, 7, 9}));
  CATCH_CHECK(models::load_checkpoint(out2, torch::kCPU).model->config().total_heads() == 72 - 22 - 2);
}

CATCH_TEST_CASE("bad pruning requests are refused and write nothing", "[surgery][errors]") {
  auto ckpt = testing::tiny_checkpoint(2, 4);
  const auto& c = ckpt.model->config();
  CATCH_REQUIRE_THROWS_WITH(pruner::plan_from_remove_heads({{"0", {4}}}, c), Catch::Contains("out of range"));
  CATCH_REQUIRE_THROWS_WITH(pruner::plan_from_remove_heads({{"0", {1, 1}}}, c), Catch::Contains("twice"));
  CATCH_REQUIRE_THROWS_WITH(pruner::plan_from_remove_heads({{"7", {1}}}, c), Catch::Contains("does not exist"));
  CATCH_REQUIRE_THROWS_WITH(pruner::plan_from_remove_heads({{"x", {1}}}, c), Catch::Contains("does not exist"));
  CATCH_REQUIRE_THROWS_WITH(pruner::plan_from_remove_heads(nlohmann::json::array({1}), c),
                            Catch::Contains("JSON object"));

  auto dir = testing::temp_dir("bad-export");
  auto source = dir / "model";
  testing::write_tiny_folder(ckpt, source);
  auto loaded = models::load_checkpoint(source, torch::kCPU);
  auto plan = pruner::plan_from_remove_heads({{"0", {1}}}, loaded.model->config());
  // --out inside the input folder
  CATCH_REQUIRE_THROWS_WITH(pruner::apply_and_export(loaded, plan, source / "sub", false, {}, torch::kCPU),
                            Catch::Contains("inside the input folder"));
  CATCH_CHECK_FALSE(std::filesystem::exists(source / "sub"));
  // --out non-empty without --force
  std::filesystem::create_directories(dir / "taken");
  std::ofstream(dir / "taken" / "keep.txt") << "precious";
  auto fresh = models::load_checkpoint(source, torch::kCPU);
  CATCH_REQUIRE_THROWS_WITH(pruner::apply_and_export(fresh, plan, dir / "taken", false, {}, torch::kCPU),
                            Catch::Contains("--force"));
  CATCH_CHECK(std::filesystem::exists(dir / "taken" / "keep.txt"));
  // No temporary folders left beside the target.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    CATCH_CHECK(e.path().filename().string().find(".partial") == std::string::npos);
}

CATCH_TEST_CASE("gates trained on another model are refused", "[surgery][errors]") {
  auto a = testing::tiny_checkpoint(2, 4, 1);
  auto b = testing::tiny_checkpoint(2, 4, 2);
  pruner::GateState state;
  state.model = pruner::fingerprint_of(*a.model);
  state.layers.resize(2);
  for (auto& l : state.layers) {
    l.heads = {0, 1, 2, 3};
    l.log_alpha = {1, 1, 1, 1};
    l.gate = {1, 1, 1, 1};
    l.keep = {true, false, true, true};
  }
  CATCH_CHECK_NOTHROW(pruner::plan_from_gates(state, *a.model, true));
  CATCH_REQUIRE_THROWS_WITH(pruner::plan_from_gates(state, *b.model, true), Catch::Contains("weights differ"));
  auto c = testing::tiny_checkpoint(3, 4, 1);
  CATCH_REQUIRE_THROWS_WITH(pruner::plan_from_gates(state, *c.model, true), Catch::Contains("3 layers"));
}
