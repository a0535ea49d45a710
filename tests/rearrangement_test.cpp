// Mask rearrangement (pruner/surgery/mask_rearrangement.h): a planted wrong mask is repaired,
// the head counts stay, and with grouped-query attention swaps stay inside KV groups.
#include <algorithm>
#include <set>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/surgery/mask_rearrangement.h"
#include "pruner/training/gate_training.h"
#include "tests/cli_support.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"

using namespace headprune;

namespace rearrangement {

/// A finished gate state of `ckpt` (a 2-step run: the structure; the tests set the masks).
pruner::GateState quick_gates(models::Checkpoint& ckpt, const pruner::Corpus& corpus, const std::string& tag,
                              double target) {
  pruner::GateTrainingOptions o;
  o.target_sparsity = target;
  o.steps = 2;
  o.max_extra_steps = 0;
  o.batch_size = 16;
  o.constraints.min_heads_per_layer = 0;
  o.save_every = 0;
  o.out_dir = testing::temp_dir(tag);
  return pruner::train_gates(ckpt, corpus, o);
}

/// Text, and a student and a dense model with the same weights, both edited alike by `plant`
/// (given their named parameters, under no_grad).
struct PlantedPair {
  pruner::Corpus corpus;
  models::Checkpoint student, dense;
};

template <typename Plant>
PlantedPair planted(PlantedPair p, Plant plant) {
  for (auto* c : {&p.student, &p.dense}) {
    torch::NoGradGuard no_grad;
    auto params = c->model->named_parameters();
    plant(params);
  }
  return p;
}

/// planted() on random text and a tiny BERT (2 layers of 4 heads).
template <typename Plant>
PlantedPair planted_pair(Plant plant) {
  return planted({testing::random_corpus(64, 8, 3), testing::tiny_checkpoint(2, 4), testing::tiny_checkpoint(2, 4)},
                 plant);
}

std::vector<int64_t> kept_counts(const pruner::GateState& s) {
  std::vector<int64_t> out;
  for (const auto& l : s.layers) out.push_back(static_cast<int64_t>(l.kept().size()));
  return out;
}

}  // namespace rearrangement

// Layer 0's head 1 writes nothing (its output columns are zero) and head 0 matters; a mask that
// keeps head 1 and removes head 0 is the wrong way round, and one swap repairs it.
CATCH_TEST_CASE("rearrangement repairs a planted wrong mask and keeps every layer's head count", "[rearrange]") {
  using namespace rearrangement;
  auto [corpus, student, dense] = planted_pair([](auto& params) {
    params["encoder.layer.0.attention.output.dense.weight"].narrow(1, 8, 8).zero_();
  });
  auto gates = quick_gates(student, corpus, "rearrange-planted", 0.25);
  auto& layer0 = gates.layers[0];
  layer0.keep = {false, true, true, true};
  layer0.log_alpha = {0.5, -1.0, 2.0, 2.0};  // the useless head is the weakest kept one
  layer0.gate = {0.0, 1.0, 1.0, 1.0};
  gates.layers[1].keep = {true, true, true, false};
  const auto counts = kept_counts(gates);
  pruner::RearrangeOptions o;
  o.enabled = true;
  const auto result = pruner::rearrange_mask(gates, student, dense, corpus.train, corpus.pad_id, o);
  CATCH_CHECK(kept_counts(gates) == counts);
  CATCH_CHECK(gates.layers[0].keep == std::vector<bool>{true, false, true, true});
  CATCH_CHECK(gates.layers[0].gate[0] == 1.0);  // brought back at gate 1
  CATCH_REQUIRE_FALSE(result.swaps.empty());
  CATCH_CHECK(result.swaps.front().layer == 0);
  CATCH_CHECK(result.swaps.front().removed == 1);
  CATCH_CHECK(result.swaps.front().restored == 0);
  CATCH_CHECK(result.loss_after < result.loss_before);
  CATCH_CHECK(gates.summary.at("rearranged").at("swaps").size() == result.swaps.size());
  // Disabled, it does nothing; enabled without text, it refuses.
  auto untouched = gates;
  pruner::RearrangeOptions off;
  CATCH_CHECK(pruner::rearrange_mask(untouched, student, dense, corpus.train, corpus.pad_id, off).swaps.empty());
  CATCH_CHECK(untouched.layers[0].keep == gates.layers[0].keep);
  CATCH_CHECK_THROWS_AS(pruner::rearrange_mask(gates, student, dense, {}, corpus.pad_id, o), Error);
}

// With FFN gates the layer's FFN blocks trade places too. Layer 0's FFN block 1 (neurons 16-31)
// writes nothing and block 0 matters; a mask that keeps block 1 and removes block 0 is the wrong
// way round, and one swap repairs it, the FFN width unchanged.
CATCH_TEST_CASE("rearrangement repairs a planted wrong FFN block mask and keeps every layer's FFN width",
                "[rearrange][ffn]") {
  using namespace rearrangement;
  auto [corpus, student, dense] = planted_pair([](auto& params) {
    torch::manual_seed(11);
    params["encoder.layer.0.intermediate.dense.weight"].normal_(0, 0.25);
    params["encoder.layer.0.output.dense.weight"].normal_(0, 0.25);
    params["encoder.layer.0.output.dense.weight"].narrow(1, 16, 16).zero_();
  });
  auto gates = quick_gates(student, corpus, "rearrange-ffn", 0.0);
  for (auto& layer : gates.layers) {  // every head kept: only the FFN blocks are wrong
    layer.keep.assign(layer.keep.size(), true);
    layer.gate.assign(layer.gate.size(), 1.0);
  }
  for (int64_t l = 0; l < 2; ++l) {
    pruner::FfnLayerGates f;
    f.width = 64;
    f.block = 16;
    f.log_alpha = {0.5, -1.0, 2.0, 2.0};  // the useless block is the weakest kept one
    f.gate = {0.0, 1.0, 1.0, 1.0};
    f.keep = {false, true, true, true};
    gates.ffn.push_back(f);
  }
  gates.ffn[1].keep = {true, true, true, false};
  gates.ffn[1].gate = {1.0, 1.0, 1.0, 0.0};
  pruner::RearrangeOptions o;
  o.enabled = true;
  const auto result = pruner::rearrange_mask(gates, student, dense, corpus.train, corpus.pad_id, o);
  CATCH_CHECK(gates.ffn[0].keep == std::vector<bool>{true, false, true, true});
  CATCH_CHECK(gates.ffn[0].gate[0] == 1.0);  // brought back at gate 1
  for (const auto& f : gates.ffn) CATCH_CHECK(f.kept_width() == 48);
  const auto first_ffn = std::find_if(result.swaps.begin(), result.swaps.end(),
                                      [](const auto& s) { return s.unit == pruner::SwapUnit::kFfnBlock; });
  CATCH_REQUIRE(first_ffn != result.swaps.end());
  CATCH_CHECK(first_ffn->layer == 0);
  CATCH_CHECK(first_ffn->removed == 1);
  CATCH_CHECK(first_ffn->restored == 0);
  CATCH_CHECK(result.loss_after < result.loss_before);
  CATCH_CHECK(gates.summary.at("rearranged").at("swaps").at(0).at("unit") == "ffn_block");
}

// stories260K: 8 query heads share 4 KV heads (2 per group). Whatever the swaps, every KV group
// keeps as many query heads as the trained mask gave it.
CATCH_TEST_CASE("with grouped-query attention a swap stays inside its KV group", "[rearrange][llama]") {
  using namespace rearrangement;
  auto student = models::load_checkpoint(testing::converted_stories(), torch::kCPU);
  auto dense = models::load_checkpoint(testing::converted_stories(), torch::kCPU);
  auto corpus = testing::random_corpus(32, 8, 5);
  auto gates = quick_gates(student, corpus, "rearrange-gqa", 0.5);
  const auto group = student.model->config().kv_group_size();
  CATCH_REQUIRE(group == 2);
  auto per_group = [&](const pruner::GateState& s) {
    std::vector<int64_t> out;
    for (const auto& l : s.layers) {
      std::vector<int64_t> counts(static_cast<std::size_t>(l.heads.size()) / static_cast<std::size_t>(group));
      for (auto h : l.kept()) ++counts[static_cast<std::size_t>(h / group)];
      out.insert(out.end(), counts.begin(), counts.end());
    }
    return out;
  };
  const auto before = per_group(gates);
  pruner::RearrangeOptions o;
  o.enabled = true;
  o.max_sequences = 16;
  const auto result = pruner::rearrange_mask(gates, student, dense, corpus.train, corpus.pad_id, o);
  CATCH_CHECK(per_group(gates) == before);
  for (const auto& s : result.swaps) CATCH_CHECK(s.removed / group == s.restored / group);
  CATCH_CHECK(result.evaluations > 1);
}

CATCH_TEST_CASE("apply --rearrange needs --gates, and --rearrange-sequences needs --rearrange", "[rearrange][cli]") {
  testing::Workspace w("rearrange-cli");
  CATCH_CHECK(testing::run_cli({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--rearrange", "-o",
                                (w.dir / "a").string()}) == 2);
  CATCH_CHECK(testing::run_cli({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})",
                                "--rearrange-sequences", "8", "-o", (w.dir / "b").string()}) == 2);
  CATCH_CHECK_FALSE(std::filesystem::exists(w.dir / "a"));
}

// Without --train-weights the rearrangement runs after gate training; with it, before the
// weights phase (GateTrainingOptions::fix_mask). Either way gates.json records it and the export
// holds the rearranged mask.
CATCH_TEST_CASE("prune --rearrange records the rearrangement with the gates it exported", "[rearrange][cli]") {
  testing::Workspace w("rearrange-prune");
  for (const bool train_weights : {false, true}) {
    CATCH_INFO("--train-weights " << train_weights);
    const auto out = w.dir / (train_weights ? "pruned-tw" : "pruned");
    std::vector<std::string> args = {"prune", w.model.string(), "--data", w.corpus.string(), "--target-sparsity",
                                     "0.25", "--steps", "4", "--batch-size", "8", "--no-bench", "--rearrange",
                                     "--rearrange-sequences", "16", "-o", out.string()};
    if (train_weights) args.insert(args.end(), {"--train-weights", "--finetune-steps", "2"});
    CATCH_REQUIRE(testing::run_cli(args) == 0);
    const auto gates = pruner::GateState::load(out / "headprune");
    CATCH_REQUIRE(gates.summary.contains("rearranged"));
    CATCH_CHECK(gates.summary.at("rearranged").at("sequences").get<int64_t>() == 16);
    CATCH_CHECK(gates.trained_model.has_value() == train_weights);
    // The export is the rearranged mask: the config's heads are the gates' kept ones.
    const auto pruned = models::load_checkpoint(out, torch::kCPU);
    for (std::size_t l = 0; l < gates.layers.size(); ++l)
      CATCH_CHECK(pruned.model->config().kept_heads[l] == gates.layers[l].kept());
  }
}

// stories260K, whole KV groups (what --gqa-mode groups and --target-kv-bytes keep): layer 0's KV
// group 1 (query heads 2 and 3) writes nothing and group 0 matters; a mask that keeps group 1 and
// removes group 0 is the wrong way round. No head swap can repair it (none stays inside a group);
// one group swap does, and the layer keeps its number of query heads and of KV groups.
CATCH_TEST_CASE("with whole KV groups a kept and a removed group trade places", "[rearrange][llama]") {
  using namespace rearrangement;
  const auto stories = [] { return models::load_checkpoint(testing::converted_stories(), torch::kCPU); };
  auto [corpus, student, dense] = planted({testing::random_corpus(32, 8, 5), stories(), stories()}, [](auto& params) {
    auto& o_proj = params["model.layers.0.self_attn.o_proj.weight"];
    const auto head_dim = o_proj.size(1) / 8;  // 8 query heads
    o_proj.narrow(1, 2 * head_dim, 2 * head_dim).zero_();
  });
  auto gates = quick_gates(student, corpus, "rearrange-kv-groups", 0.5);
  CATCH_REQUIRE(student.model->config().kv_group_size() == 2);
  for (auto& layer : gates.layers) {  // every other layer whole; layer 0 below
    layer.keep.assign(layer.keep.size(), true);
    layer.gate.assign(layer.gate.size(), 1.0);
  }
  auto& layer0 = gates.layers[0];
  layer0.keep = {false, false, true, true, true, true, true, true};
  layer0.gate = {0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  layer0.log_alpha = {0.5, 0.5, -1.0, -1.0, 2.0, 2.0, 2.0, 2.0};  // the useless group is the weakest kept one
  pruner::RearrangeOptions o;
  o.enabled = true;
  o.max_sequences = 16;
  const auto result = pruner::rearrange_mask(gates, student, dense, corpus.train, corpus.pad_id, o);
  CATCH_CHECK(gates.layers[0].keep == std::vector<bool>{true, true, false, false, true, true, true, true});
  CATCH_CHECK(gates.layers[0].gate[0] == 1.0);  // brought back at gate 1
  CATCH_REQUIRE_FALSE(result.swaps.empty());
  const auto& swap = result.swaps.front();
  CATCH_CHECK(swap.unit == pruner::SwapUnit::kKvGroup);
  CATCH_CHECK(swap.layer == 0);
  CATCH_CHECK(swap.removed == 1);
  CATCH_CHECK(swap.restored == 0);
  CATCH_CHECK(result.loss_after < result.loss_before);
  CATCH_CHECK(gates.summary.at("rearranged").at("swaps").at(0).at("unit") == "kv_group");
}
