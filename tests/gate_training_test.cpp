// Gate training on small random models: exact targets, planted heads, resumption,
// interruption by a signal.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "pruner/training/gate_training.h"
#include "pruner/training/interruption.h"
#include "pruner/training/training_run.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"

using namespace headprune;

namespace {

pruner::GateTrainingOptions quick_options(const std::string& tag, double target, int64_t steps) {
  pruner::GateTrainingOptions o;
  o.target_sparsity = target;
  o.steps = steps;
  o.max_extra_steps = 0;  // exactly `steps`; the extension has its own test
  o.batch_size = 16;
  o.learning_rate = 0.2;
  o.constraints.min_heads_per_layer = 0;
  o.log_every = 1000;
  o.save_every = 0;
  o.out_dir = testing::temp_dir(tag);
  return o;
}

std::vector<std::vector<int64_t>> removed_heads(const pruner::GateState& s) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& l : s.layers) {
    std::vector<int64_t> r;
    for (size_t i = 0; i < l.heads.size(); ++i)
      if (!l.keep[i]) r.push_back(l.heads[i]);
    out.push_back(r);
  }
  return out;
}

/// Continues the run of `o` with --resume and checks it ends where the uninterrupted `full` did.
void resume_and_compare(models::Checkpoint& ckpt, const pruner::Corpus& corpus, pruner::GateTrainingOptions o,
                        const pruner::GateState& full) {
  o.stop_after = 0;
  o.resume = true;
  auto resumed = pruner::train_gates(ckpt, corpus, o);
  CATCH_REQUIRE(resumed.complete);
  for (size_t l = 0; l < full.layers.size(); ++l)
    for (size_t h = 0; h < full.layers[l].log_alpha.size(); ++h)
      CATCH_CHECK(resumed.layers[l].log_alpha[h] == Approx(full.layers[l].log_alpha[h]).margin(1e-6));
}

}  // namespace

CATCH_TEST_CASE("a Lagrangian run drives the expected sparsity to the target", "[training]") {
  auto ckpt = testing::tiny_checkpoint(2, 4);
  auto corpus = testing::random_corpus(96, 16, 11);
  auto o = quick_options("lagrangian", 0.5, 300);
  o.log_every = 5;
  auto state = pruner::train_gates(ckpt, corpus, o);
  CATCH_CHECK(state.complete);
  // The gates' own expected sparsity moves from where it starts to the target: a frozen or
  // wrong-signed multiplier leaves it far away (the final mask rule alone would still keep
  // 4 heads, so the head count below proves nothing about training).
  std::vector<double> expected;
  std::ifstream log(o.out_dir / "train_log.jsonl");
  for (std::string line; std::getline(log, line);)
    expected.push_back(nlohmann::json::parse(line).at("expected_sparsity").get<double>());
  CATCH_REQUIRE(expected.size() >= 10);
  CATCH_INFO("expected sparsity: first " << expected.front() << ", last " << expected.back());
  CATCH_CHECK(std::abs(expected.front() - 0.5) > 0.25);
  CATCH_CHECK(std::abs(expected.back() - 0.5) <= 0.1);
  CATCH_CHECK(std::abs(state.summary["expected_sparsity"].get<double>() - 0.5) <= 0.1);
  CATCH_CHECK(state.heads_total() == 8);
  CATCH_CHECK(state.heads_kept() == 4);
  CATCH_CHECK(std::filesystem::exists(o.out_dir / "gates.json"));
  CATCH_CHECK(std::filesystem::exists(o.out_dir / "train_log.jsonl"));
  auto reloaded = pruner::GateState::load(o.out_dir);
  CATCH_CHECK(reloaded.heads_kept() == 4);
  CATCH_CHECK(reloaded.summary.contains("heldout_fidelity"));
}

CATCH_TEST_CASE("planted useless heads are pruned and essential heads kept", "[training]") {
  auto ckpt = testing::tiny_checkpoint(3, 4, 21);
  auto* bert = dynamic_cast<models::BertModel*>(ckpt.model.get());
  // Useless: the output projection ignores them. Essential: their output is amplified.
  const std::vector<std::pair<int, int>> useless = {{0, 1}, {1, 0}, {1, 3}, {2, 2}};
  const std::vector<std::pair<int, int>> essential = {{0, 0}, {1, 1}, {2, 3}};
  {
    torch::NoGradGuard no_grad;
    for (auto [l, h] : useless) bert->layers[l]->attention->output->dense->weight.narrow(1, h * 8, 8).zero_();
    for (auto [l, h] : essential) bert->layers[l]->attention->output->dense->weight.narrow(1, h * 8, 8).mul_(4.0);
  }
  auto corpus = testing::random_corpus(128, 16, 5);
  auto o = quick_options("planted", 4.0 / 12.0, 150);
  auto state = pruner::train_gates(ckpt, corpus, o);
  const auto removed = removed_heads(state);
  CATCH_CHECK(removed == std::vector<std::vector<int64_t>>{{1}, {0, 3}, {2}});
  for (auto [l, h] : essential) CATCH_CHECK(state.layers[l].keep[h]);
}

CATCH_TEST_CASE("an interrupted run resumed with --resume equals an uninterrupted one", "[training]") {
  auto corpus = testing::random_corpus(64, 8, 3);
  auto full_ckpt = testing::tiny_checkpoint(2, 4);
  auto full = pruner::train_gates(full_ckpt, corpus, quick_options("full", 0.25, 30));

  auto ckpt = testing::tiny_checkpoint(2, 4);
  auto o = quick_options("resumed", 0.25, 30);
  o.stop_after = 12;
  auto partial = pruner::train_gates(ckpt, corpus, o);
  CATCH_CHECK_FALSE(partial.complete);
  CATCH_CHECK(partial.step == 12);
  resume_and_compare(ckpt, corpus, o, full);
}

// 40 steps are too few for this target (the expected sparsity is still far from the mask's);
// with --max-extra-steps the gate phase goes on in blocks of 4 steps until it has converged,
// within the bound, and a run stopped inside the extension resumes to the same gates.
CATCH_TEST_CASE("gates that have not converged after --steps train on, bounded, and resume alike", "[training]") {
  auto corpus = testing::random_corpus(64, 8, 3);
  auto run = [&](const std::string& tag, int64_t extra, int64_t stop_after) {
    auto ckpt = testing::tiny_checkpoint(2, 4);
    auto o = quick_options(tag, 0.5, 40);
    o.max_extra_steps = extra;
    o.stop_after = stop_after;
    auto state = pruner::train_gates(ckpt, corpus, o);
    return std::make_pair(state, o);
  };
  const auto [fixed, o_fixed] = run("no-extension", 0, 0);
  CATCH_CHECK_FALSE(fixed.summary.at("converged").get<bool>());
  CATCH_CHECK(fixed.summary.at("gate_steps").get<int64_t>() == 40);
  const auto [extended, o_extended] = run("extended", 400, 0);
  const auto gate_steps = extended.summary.at("gate_steps").get<int64_t>();
  CATCH_INFO("gate steps " << gate_steps << ", expected sparsity " << extended.summary.at("expected_sparsity"));
  CATCH_CHECK(extended.summary.at("converged").get<bool>());
  CATCH_CHECK(gate_steps > 40);
  CATCH_CHECK(gate_steps <= 440);
  CATCH_CHECK((gate_steps - 40) % 4 == 0);
  CATCH_CHECK(extended.step == gate_steps);
  // Stopped one step into the extension: the snapshot records where the gate phase ends.
  auto [partial, o_partial] = run("extended-resumed", 400, 41);
  CATCH_REQUIRE_FALSE(partial.complete);
  auto ckpt = testing::tiny_checkpoint(2, 4);
  resume_and_compare(ckpt, corpus, o_partial, extended);
  // Bounded: a bound smaller than what convergence needs ends there, and says so.
  const auto [bounded, o_bounded] = run("bounded", 4, 0);
  CATCH_CHECK(bounded.summary.at("gate_steps").get<int64_t>() == 44);
  CATCH_CHECK_THAT(bounded.summary.at("convergence_warning").get<std::string>(),
                   Catch::Contains("after 4 steps more than --steps"));
}

// --distill-layers: every logged step's loss less its regulariser is the encoder objective plus
// w × the layer-wise term, which is logged; a one-layer model is refused before training.
CATCH_TEST_CASE("layer-wise distillation adds its logged term with its weight", "[training]") {
  auto corpus = testing::random_corpus(64, 8, 3);
  auto ckpt = testing::tiny_checkpoint(2, 4);
  auto o = quick_options("distill-layers", 0.25, 6);
  o.distill_layers = 2.5;
  o.log_every = 1;
  o.max_extra_steps = 0;
  pruner::train_gates(ckpt, corpus, o);
  std::ifstream log(o.out_dir / "train_log.jsonl");
  int steps = 0;
  double largest = 0;  // some step samples a gate of layer 0 below 1, which changes its output
  for (std::string line; std::getline(log, line); ++steps) {
    const auto r = nlohmann::json::parse(line);
    CATCH_REQUIRE(r.contains("layer_loss"));
    largest = std::max(largest, r["layer_loss"].get<double>());
    const double expected = r["hidden_loss"].get<double>() + o.embedding_weight * r["embedding_loss"].get<double>() +
                            2.5 * r["layer_loss"].get<double>();
    CATCH_CHECK(r["loss"].get<double>() - r["regularizer"].get<double>() == Approx(expected).epsilon(1e-5));
  }
  CATCH_CHECK(steps == 6);
  CATCH_CHECK(largest > 0);
  CATCH_CHECK_FALSE(ckpt.model->output_hidden_states());  // the run leaves the model as it was
  auto one_layer = testing::tiny_checkpoint(1, 4);
  auto refused = quick_options("distill-one-layer", 0.25, 6);
  refused.distill_layers = 1;
  CATCH_CHECK_THROWS_WITH(pruner::train_gates(one_layer, corpus, refused), Catch::Contains("only one layer"));
}

CATCH_TEST_CASE("an unreachable target fails before training", "[training]") {
  auto ckpt = testing::tiny_checkpoint(2, 4);
  auto corpus = testing::random_corpus(32, 8, 3);
  auto o = quick_options("unreachable", 0.9, 10);
  o.constraints.min_heads_per_layer = 1;
  CATCH_REQUIRE_THROWS_WITH(pruner::train_gates(ckpt, corpus, o), Catch::Contains("cannot be reached"));
  CATCH_CHECK_FALSE(std::filesystem::exists(o.out_dir / "gates.json"));
}

CATCH_TEST_CASE("SIGTERM mid-run saves a snapshot that --resume continues to the same result",
                "[training][signal]") {
  auto corpus = testing::random_corpus(64, 8, 3);
  auto full_ckpt = testing::tiny_checkpoint(2, 4);
  auto full = pruner::train_gates(full_ckpt, corpus, quick_options("sig-full", 0.25, 1000));

  // A late signal (after the run) must not end the test process: ignore it outside the guard.
  const auto previous = std::signal(SIGTERM, SIG_IGN);
  auto ckpt = testing::tiny_checkpoint(2, 4);
  auto o = quick_options("sig-resumed", 0.25, 1000);
  o.log_every = 1;
  std::thread preemption([log = o.out_dir / "train_log.jsonl"] {
    for (int i = 0; i < 20000; ++i) {  // after the fifth step has been logged
      std::ifstream in(log);
      const auto lines = std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
      if (lines >= 5) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ::kill(::getpid(), SIGTERM);
  });
  int signal_number = 0;
  try {
    pruner::train_gates(ckpt, corpus, o);
  } catch (const pruner::Interrupted& e) {
    signal_number = e.signal_number();
    CATCH_CHECK_THAT(e.what(), Catch::Contains("SIGTERM received") && Catch::Contains("--resume"));
  }
  preemption.join();
  std::signal(SIGTERM, previous);
  CATCH_REQUIRE(signal_number == SIGTERM);
  const auto snapshot = pruner::GateState::load(o.out_dir);
  CATCH_CHECK_FALSE(snapshot.complete);
  CATCH_CHECK((snapshot.step >= 5 && snapshot.step < 1000));
  resume_and_compare(ckpt, corpus, o, full);
}

namespace {

/// In `state`, one layer's first kept head and first removed head trade places (the restored head
/// at gate 1), as a rearrangement would; false when no layer has both.
bool swap_one_head(pruner::GateState& state) {
  for (auto& layer : state.layers) {
    const auto kept = std::find(layer.keep.begin(), layer.keep.end(), true);
    const auto removed = std::find(layer.keep.begin(), layer.keep.end(), false);
    if (kept == layer.keep.end() || removed == layer.keep.end()) continue;
    const auto in = static_cast<std::size_t>(removed - layer.keep.begin());
    *kept = false;
    layer.keep[in] = true;
    layer.gate[in] = 1.0;
    return true;
  }
  return false;
}

std::vector<std::vector<bool>> keep_masks(const pruner::GateState& s) {
  std::vector<std::vector<bool>> out;
  for (const auto& l : s.layers) out.push_back(l.keep);
  return out;
}

}  // namespace

// The prune job's --rearrange with --train-weights goes through fix_mask: the mask is changed
// once, while the weights are still the dense ones, the weights then train on the changed mask,
// and a run stopped in the weights phase resumes on that mask (not on one fixed again with the
// weights it has by then).
CATCH_TEST_CASE("fix_mask changes the mask once before the weights train and a resumed weights phase keeps it",
                "[training][rearrange]") {
  auto corpus = testing::random_corpus(64, 8, 3);
  const auto first_weight = [](const models::Checkpoint& c) { return c.model->parameters().front().detach().clone(); };
  const auto dense_weight = first_weight(testing::tiny_checkpoint(2, 4));
  int calls = 0;
  std::vector<std::vector<bool>> fixed;
  std::filesystem::path out_dir;
  const auto run = [&](const std::string& tag, int64_t stop_after, bool resume) {
    auto ckpt = testing::tiny_checkpoint(2, 4);
    auto o = quick_options(tag, 0.25, 20);
    if (resume) o.out_dir = out_dir;  // the stopped run's folder
    out_dir = o.out_dir;
    o.train_weights = true;
    o.finetune_steps = 10;
    o.stop_after = stop_after;
    o.resume = resume;
    o.fix_mask = [&](pruner::GateState& state) {
      ++calls;
      CATCH_CHECK(torch::equal(first_weight(ckpt), dense_weight));  // the weights have not trained yet
      CATCH_REQUIRE(swap_one_head(state));
      fixed = keep_masks(state);
    };
    auto state = pruner::train_gates(ckpt, corpus, o);
    return std::make_pair(state, first_weight(ckpt));
  };
  const auto [full, full_weight] = run("fix-mask-full", 0, false);
  CATCH_CHECK(calls == 1);
  CATCH_CHECK(keep_masks(full) == fixed);
  CATCH_CHECK_FALSE(torch::equal(full_weight, dense_weight));  // the weights did train

  calls = 0;
  const auto [partial, partial_weight] = run("fix-mask-resumed", 25, false);  // 5 steps into the weights phase
  CATCH_REQUIRE_FALSE(partial.complete);
  CATCH_CHECK(calls == 1);
  CATCH_CHECK(std::filesystem::exists(out_dir / pruner::kFixedMaskFile));
  const auto [resumed, resumed_weight] = run("fix-mask-resumed", 0, true);
  CATCH_CHECK(calls == 1);  // not fixed again
  CATCH_CHECK_FALSE(std::filesystem::exists(out_dir / pruner::kFixedMaskFile));  // a finished run's folder
  CATCH_CHECK(keep_masks(resumed) == keep_masks(full));
  CATCH_CHECK(torch::allclose(resumed_weight, full_weight, 1e-5, 1e-6));  // trained on the same mask
}

// --finetune-pruned-layers: the weights phase trains the layers the fixed mask removed a head
// from, and nothing else: the embeddings and every layer that kept all its heads stay bit for bit
// the source's.
CATCH_TEST_CASE("finetune_pruned_layers trains only the layers that lost heads", "[training]") {
  auto corpus = testing::random_corpus(64, 8, 3);
  auto ckpt = testing::tiny_checkpoint(3, 4);
  models::TensorMap before;
  for (const auto& [name, tensor] : models::state_dict(*ckpt.model)) before[name] = tensor.clone();
  auto o = quick_options("finetune-pruned-layers", 0.25, 20);  // 3 of 12 heads
  o.train_weights = true;
  o.finetune_steps = 5;
  o.finetune_pruned_layers = true;
  const auto state = pruner::train_gates(ckpt, corpus, o);
  std::vector<bool> pruned, changed(3, false);
  for (const auto& layer : state.layers) pruned.push_back(std::count(layer.keep.begin(), layer.keep.end(), false) > 0);
  CATCH_REQUIRE(std::count(pruned.begin(), pruned.end(), true) > 0);
  const std::string prefix = "encoder.layer.";
  for (const auto& [name, tensor] : models::state_dict(*ckpt.model)) {
    CATCH_INFO(name);
    const bool same = torch::equal(tensor, before.at(name));
    if (name.rfind(prefix, 0) != 0) {
      CATCH_CHECK(same);  // embeddings, pooler
      continue;
    }
    const auto l = std::stoul(name.substr(prefix.size()));
    if (!pruned.at(l)) CATCH_CHECK(same);
    changed.at(l) = changed.at(l) || !same;
  }
  for (std::size_t l = 0; l < 3; ++l) CATCH_CHECK(changed[l] == pruned[l]);
}
