// Activation checkpointing per decoder layer (models/layer_checkpoint.h, issue 37 item 2): the
// gradients and the trained gates of the plain pass.
//
// Tolerances. The recomputed layer runs the same float32 operations on the same values as the
// first forward pass, so its outputs are equal; backward then differs from the plain pass at
// most in the order gradients of the residual stream are summed: float32_tolerance
// (tests/tolerance.h) for gradients, and for gates after 20 AdamW steps the chunked KL test's
// argument (tests/chunked_kl_test.cpp): a step of AdamW moves log_alpha by lr · m̂/√v̂, so a
// relative gradient difference γ moves it by at most lr · 4γ per step.
#include <torch/torch.h>

#include "gates/hard_concrete.h"
#include "models/checkpoint.h"
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/text/corpus.h"
#include "pruner/training/gate_training.h"
#include "tests/stories_training.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace layer_checkpoint_test {

/// Gradients of the head multipliers (all 0.7) of `ckpt`'s model for the mean squared logit of a
/// padded batch, with layers checkpointed or not.
torch::Tensor multiplier_gradients(models::Checkpoint& ckpt, bool checkpointed) {
  for (auto& p : ckpt.model->parameters()) p.set_requires_grad(false);
  ckpt.model->set_checkpoint_layers(checkpointed);
  const auto& c = ckpt.model->config();
  torch::manual_seed(5);
  const auto ids = torch::randint(3, c.vocab_size, {2, 9}, torch::kLong);
  auto mask = torch::ones_like(ids);
  mask.index_put_({1, torch::indexing::Slice(6)}, 0);
  models::HeadMultipliers m;
  for (auto h : c.heads_per_layer()) m.push_back(torch::full({h}, 0.7).set_requires_grad(true));
  ckpt.model->forward({ids, mask, {}}, &m).logits.pow(2).mean().backward();
  std::vector<torch::Tensor> g;
  for (auto& t : m) g.push_back(t.grad());
  return torch::cat(g);
}

}  // namespace layer_checkpoint_test

using namespace layer_checkpoint_test;

CATCH_TEST_CASE("checkpointed decoder layers give the plain pass's head-multiplier gradients", "[checkpoint][llama]") {
  for (const std::string name : {"llama3", "gemma3", "qwen3"}) {
    CATCH_INFO(name);
    auto ckpt = models::load_checkpoint(testing::fixture_path(name), torch::kCPU);
    const auto plain = multiplier_gradients(ckpt, false), checkpointed = multiplier_gradients(ckpt, true);
    const double tol = testing::float32_tolerance(ckpt.model->config(), plain);
    CATCH_INFO("largest difference " << (plain - checkpointed).abs().max().item<double>() << ", bound " << tol);
    CATCH_CHECK((plain - checkpointed).abs().max().item<double>() <= tol);
    CATCH_CHECK(plain.abs().max().item<double>() > 50 * tol);  // gradients well above the bound
  }
}

CATCH_TEST_CASE("stories260K: gates trained with checkpointed layers equal the plain pass's after 20 steps",
                "[checkpoint][llama]") {
  const auto dir = testing::converted_stories();
  auto train = [&](const std::string& checkpoint_layers) {
    return testing::train_stories_20_steps(
        dir, [&](pruner::GateTrainingOptions& o) { o.checkpoint_layers = checkpoint_layers; },
        [&](const models::Checkpoint& ckpt) { CATCH_CHECK(ckpt.model->checkpoint_layers() == (checkpoint_layers == "on")); });
  };
  const auto plain = train("off"), checkpointed = train("on");
  const auto config = models::read_config_file(dir);
  const double gamma = static_cast<double>(std::max(config.hidden_size, config.intermediate_size) * config.num_hidden_layers) *
                       testing::kFloat32UnitRoundoff;
  const double tol = 20 * 0.1 * 4 * gamma;
  const double worst = testing::largest_log_alpha_difference(plain, checkpointed);
  CATCH_INFO("largest log_alpha difference " << worst << ", bound " << tol);
  CATCH_CHECK(worst <= tol);
  CATCH_CHECK(testing::largest_log_alpha_move(plain) > 100 * tol);  // the gates trained: equality is not trivial
}
