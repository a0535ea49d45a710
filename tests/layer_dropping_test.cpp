// Whole-layer removal (issue 17, item 5a's baseline): the config's renumbering, and the dropped
// model against the shallower checkpoint written by hand — for BERT (all-MiniLM-L6-v2, with
// heads already pruned) and LLaMA (stories260K). Same weights and the same operations in the
// same order, so the outputs must be bitwise equal.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

const nlohmann::json kPruned = {{"0", {0, 1, 2}}, {"1", {11}}, {"2", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
                                {"3", {1, 3, 5, 7, 9}}, {"5", {4}}};

/// `ckpt`'s weights with the layers in `drop` left out and the later ones renumbered, next to
/// `config` (written as given) and `source`'s other files: the shallower model built by hand.
fs::path shallower_by_hand(const models::Checkpoint& ckpt, const fs::path& source, const std::string& prefix,
                           const std::set<int64_t>& drop, const nlohmann::json& config) {
  const auto dir = testing::temp_dir("by-hand");
  models::TensorMap renamed;
  for (const auto& [name, tensor] : models::checkpoint_state_dict(ckpt)) {
    if (name.rfind(prefix, 0) != 0) {
      renamed[name] = tensor;
      continue;
    }
    const auto dot = name.find('.', prefix.size());
    const auto layer = std::stoll(name.substr(prefix.size(), dot - prefix.size()));
    if (drop.count(layer)) continue;
    int64_t below = 0;
    for (auto d : drop) below += d < layer ? 1 : 0;
    renamed[prefix + std::to_string(layer - below) + name.substr(dot)] = tensor;
  }
  models::save_safetensors(dir / "model.safetensors", renamed);
  std::ofstream(dir / "config.json") << config.dump(2);
  for (const auto& entry : fs::directory_iterator(source))
    if (entry.path().extension() != ".safetensors" && entry.path().filename() != "config.json")
      fs::copy(entry.path(), dir / entry.path().filename(), fs::copy_options::recursive);
  return dir;
}

models::ModelInputs some_ids(int64_t vocab) {
  auto ids = ((torch::arange(48, torch::kLong) * 7919 + 11) % (vocab - 10) + 5).view({3, 16});
  auto mask = torch::ones_like(ids);
  mask[2].slice(0, 10).fill_(0);
  return {ids, mask, {}};
}

}  // namespace

CATCH_TEST_CASE("removing layers renumbers the config and refuses bad lists", "[layers][config]") {
  auto config = models::read_config_file(testing::minilm_dir());
  config.raw["pruned_heads"] = kPruned;
  config = models::read_config(config.raw, "test");
  for (const auto& bad : std::vector<std::vector<int64_t>>{{6}, {-1}, {1, 1}, {0, 1, 2, 3, 4, 5}}) {
    auto copy = config;
    CATCH_CHECK_THROWS_AS(copy.remove_layers(bad), Error);
    CATCH_CHECK(copy.num_hidden_layers == 6);
    CATCH_CHECK(copy.kept_heads == config.kept_heads);
  }
  config.remove_layers({4, 1});
  CATCH_CHECK(config.num_hidden_layers == 4);
  CATCH_CHECK(config.raw["num_hidden_layers"] == 4);
  CATCH_CHECK(config.heads_per_layer() == std::vector<int64_t>{9, 0, 7, 11});
  CATCH_CHECK(config.to_json()["pruned_heads"] ==
              nlohmann::json({{"0", {0, 1, 2}}, {"1", kPruned["2"]}, {"2", kPruned["3"]}, {"3", {4}}}));
}

CATCH_TEST_CASE("a BERT with layers dropped is the shallower checkpoint built by hand", "[layers][surgery][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  pruner::apply_plan(*ckpt.model, pruner::plan_from_remove_heads(kPruned, ckpt.model->config()));
  auto config = ckpt.model->config().to_json();
  config["num_hidden_layers"] = 4;
  config["pruned_heads"] = {{"0", {0, 1, 2}}, {"1", kPruned["2"]}, {"2", kPruned["3"]}, {"3", {4}}};
  const auto by_hand = shallower_by_hand(ckpt, testing::minilm_dir(), "encoder.layer.", {1, 4}, config);
  const auto result = pruner::drop_layers_in_memory(ckpt, {4, 1});
  CATCH_CHECK(result.layers_removed == std::vector<int64_t>{1, 4});
  CATCH_CHECK(result.params_before - result.params_after > 0);
  const auto reference = models::load_checkpoint(by_hand, torch::kCPU);
  const auto in = some_ids(ckpt.model->config().vocab_size);
  torch::NoGradGuard no_grad;
  CATCH_CHECK(torch::equal(ckpt.model->forward(in, nullptr).last_hidden_state,
                           reference.model->forward(in, nullptr).last_hidden_state));
  CATCH_CHECK(models::state_dict(*ckpt.model).size() == models::state_dict(*reference.model).size());
}

CATCH_TEST_CASE("a LLaMA with layers dropped is the shallower checkpoint built by hand", "[layers][surgery][llama]") {
  const auto dir = testing::converted_stories();
  auto ckpt = models::load_checkpoint(dir, torch::kCPU);
  auto config = ckpt.model->config().raw;
  config["num_hidden_layers"] = 3;
  const auto by_hand = shallower_by_hand(ckpt, dir, "model.layers.", {1, 3}, config);
  ckpt.model->drop_layers({3, 1});
  CATCH_CHECK(ckpt.model->config().num_hidden_layers == 3);
  const auto reference = models::load_checkpoint(by_hand, torch::kCPU);
  const auto in = some_ids(ckpt.model->config().vocab_size);
  torch::NoGradGuard no_grad;
  CATCH_CHECK(torch::equal(ckpt.model->forward(in, nullptr).logits, reference.model->forward(in, nullptr).logits));
  CATCH_CHECK_THROWS_AS(ckpt.model->drop_layers({0, 1, 2}), Error);
  CATCH_CHECK(ckpt.model->config().num_hidden_layers == 3);
}
