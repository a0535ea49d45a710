#include "pruner/measure/training_bench.h"

#include <chrono>
#include <functional>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "gates/hard_concrete.h"
#include "gates/sparsity.h"
#include "models/errors.h"
#include "pruner/measure/bench.h"
#include "pruner/training/distillation.h"
#include "pruner/training/sparsity_measure.h"
#include "pruner/log.h"

namespace headprune::pruner {

double TrainingBenchReport::tokens_per_s(double ms) const {
  return ms > 0 ? static_cast<double>(batch * seq) / (ms / 1000.0) : 0;
}

nlohmann::json TrainingBenchReport::to_json() const {
  auto kind = [&](double ms) { return nlohmann::json{{"median_ms", ms}, {"tokens_per_s", tokens_per_s(ms)}}; };
  auto j = threads.to_json();
  j.update({{"batch_size", batch},
          {"seq_len", seq},
          {"reps", reps},
          {"device", device},
          {"dense_forward_backward", kind(dense_ms)},
          {"gate_step", kind(gate_ms)},
          {"gate_step_cached_teacher", kind(gate_cached_ms)},
          {"gate_step_over_dense", gate_ms / dense_ms},
          {"gate_step_cached_over_dense", gate_cached_ms / dense_ms}});
  return j;
}

std::string TrainingBenchReport::to_text() const {
  std::string s = fmt::format("device {}, {}, BLAS {}; batch {} x seq {}, median of {} "
                              "interleaved steps\n",
                              device, threads.describe(),
                              threads.describe_blas(), batch, seq, reps);
  auto row = [&](const char* what, double ms) {
    s += fmt::format("{:<52} {:>9.1f} ms {:>9.0f} tok/s {:>7.3f}x dense\n", what, ms,
                     tokens_per_s(ms), ms / dense_ms);
  };
  row("dense forward + backward (all weights)", dense_ms);
  row("gate step: teacher fwd + gated fwd + bwd to log_alpha", gate_ms);
  row("gate step, teacher outputs cached", gate_cached_ms);
  return s;
}

namespace {

/// The three kinds of step the bench compares, on one fixed random batch.
class StepKinds {
 public:
  StepKinds(models::Checkpoint& ckpt, const TrainingBenchOptions& o)
      : ckpt_(ckpt),
        model_(*ckpt.model),
        device_(o.device),
        in_(random_batch(model_.config(), o)),
        gates_(model_.config().heads_per_layer(), {}),
        gate_opt_({gates_.log_alpha}, torch::optim::AdamWOptions(0.1).weight_decay(0)),
        measure_(sparsity_measure(model_.config(), gates::SparsityUnit::kHeads, o.seq)) {
    model_.eval();
    gates_.to(device_);
    lagrangian_.to(device_);
    torch::NoGradGuard no_grad;
    cached_ = distillation_target(model_.forward(in_, nullptr));
  }

  /// Forward and backward through every weight: what a plain training step costs.
  void dense_step() {
    set_weights_grad(true);
    auto loss = distillation_target(model_.forward(in_, nullptr)).pow(2).mean();
    loss.backward();
    sync(loss);
    set_weights_grad(false);
  }

  /// A gate-training step: teacher forward (unless cached), gated forward, backward to log_alpha.
  void gate_step(bool teacher_cached) {
    torch::Tensor teacher = cached_;
    if (!teacher_cached) {
      torch::NoGradGuard no_grad;
      teacher = distillation_target(model_.forward(in_, nullptr));
    }
    auto multipliers = gates_.split(gates_.sample());
    auto loss = distillation(model_.forward(in_, &multipliers), teacher, in_.attention_mask,
                             ckpt_.pooling, 1.0).total +
                lagrangian_.penalty(measure_.expected(gates_), 0.5);
    gate_opt_.zero_grad();
    loss.backward();
    gate_opt_.step();
    sync(loss);
  }

 private:
  static models::ModelInputs random_batch(const models::ModelConfig& config, const TrainingBenchOptions& o) {
    torch::manual_seed(o.seed);
    auto ids = torch::randint(std::min<int64_t>(1000, config.vocab_size - 1), config.vocab_size,
                              {o.batch, o.seq}, torch::kLong).to(o.device);
    return {ids, torch::ones_like(ids), {}};
  }
  void sync(const torch::Tensor& t) const {
    if (device_.is_cuda()) torch::cuda::synchronize();
    else (void)t.sum().item<float>();
  }
  void set_weights_grad(bool on) {
    for (auto& p : model_.parameters()) {
      p.set_requires_grad(on);
      p.mutable_grad() = torch::Tensor();
    }
  }

  models::Checkpoint& ckpt_;
  models::AttentionModel& model_;
  torch::Device device_;
  models::ModelInputs in_;
  gates::HardConcreteGates gates_;
  gates::Lagrangian lagrangian_;
  torch::optim::AdamW gate_opt_;
  gates::SparsityMeasure measure_;
  torch::Tensor cached_;
};

/// Runs each kind `warmup` times, then `reps` interleaved rounds (the order rotates each
/// round); returns each kind's median milliseconds.
std::vector<double> interleaved_medians(const std::vector<std::function<void()>>& kinds, int warmup,
                                        int reps) {
  auto time_ms = [](const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < warmup; ++i)
    for (const auto& k : kinds) k();
  std::vector<std::vector<double>> ms(kinds.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t i = 0; i < kinds.size(); ++i) {
      const size_t k = (i + static_cast<size_t>(rep)) % kinds.size();
      ms[k].push_back(time_ms(kinds[k]));
    }
    log::info("training bench: {}/{} rounds", rep + 1, reps);
  }
  std::vector<double> medians;
  for (const auto& m : ms) medians.push_back(percentile(m, 0.5));
  return medians;
}

}  // namespace

TrainingBenchReport run_training_bench(models::Checkpoint& ckpt, const TrainingBenchOptions& o) {
  const auto& config = ckpt.model->config();
  if (o.batch < 1 || o.seq < 1 || o.reps < 1)
    throw Error("batch, seq and reps must be at least 1");
  if (o.seq > config.max_position_embeddings)
    throw Error(fmt::format("--seq {} exceeds max_position_embeddings {}", o.seq,
                            config.max_position_embeddings));
  StepKinds steps(ckpt, o);
  const auto medians = interleaved_medians(
      {[&] { steps.dense_step(); }, [&] { steps.gate_step(false); }, [&] { steps.gate_step(true); }},
      o.warmup, o.reps);
  TrainingBenchReport r;
  r.batch = o.batch;
  r.seq = o.seq;
  r.reps = o.reps;
  r.threads = current_thread_pools();
  r.device = o.device.str();
  r.dense_ms = medians[0];
  r.gate_ms = medians[1];
  r.gate_cached_ms = medians[2];
  return r;
}

}  // namespace headprune::pruner
