// Twenty steps of gate training on the real stories260K, for tests that compare two ways of
// computing the same training (chunked KL, checkpointed layers).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>

#include "gates/hard_concrete.h"
#include "models/checkpoint.h"
#include "models/loader.h"
#include "pruner/text/corpus.h"
#include "pruner/training/gate_training.h"
#include "tests/stories_support.h"

namespace headprune::testing {

/// stories260K (converted, in `dir`) with gates trained 20 steps (no extension) to sparsity 0.5,
/// batch 8 of tinyshakespeare lines cut at 64 tokens; `configure` sets the options the test
/// varies, `inspect` (optional) sees the checkpoint after training.
inline pruner::GateState train_stories_20_steps(const std::filesystem::path& dir,
                                                const std::function<void(pruner::GateTrainingOptions&)>& configure,
                                                const std::function<void(const models::Checkpoint&)>& inspect = {}) {
  auto ckpt = models::load_checkpoint(dir, torch::kCPU);
  pruner::CorpusOptions co;
  co.max_length = 64;
  co.max_lines = 400;
  const auto corpus =
      pruner::load_corpus({shared_data_dir() / "corpus" / "tinyshakespeare_input.txt"}, *ckpt.tokenizer, co);
  pruner::GateTrainingOptions o;
  o.target_sparsity = 0.5;
  o.steps = 20;
  o.max_extra_steps = 0;  // the callers' bounds are for 20 steps
  o.batch_size = 8;
  o.log_every = 20;
  o.save_every = 0;
  o.out_dir = temp_dir("stories-20-steps");
  configure(o);
  auto state = pruner::train_gates(ckpt, corpus, o);
  if (inspect) inspect(ckpt);
  return state;
}

/// The largest |difference| between two runs' log_alphas.
inline double largest_log_alpha_difference(const pruner::GateState& a, const pruner::GateState& b) {
  double worst = 0;
  for (std::size_t l = 0; l < a.layers.size(); ++l)
    for (std::size_t h = 0; h < a.layers[l].log_alpha.size(); ++h)
      worst = std::max(worst, std::abs(a.layers[l].log_alpha[h] - b.layers[l].log_alpha[h]));
  return worst;
}

/// How far a run's log_alphas moved from their start (log_alpha_init): a run that trained
/// nothing would pass a comparison trivially.
inline double largest_log_alpha_move(const pruner::GateState& s) {
  double moved = 0;
  for (const auto& layer : s.layers)
    for (double a : layer.log_alpha) moved = std::max(moved, std::abs(a - gates::HardConcreteOptions{}.log_alpha_init));
  return moved;
}

}  // namespace headprune::testing
