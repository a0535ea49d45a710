#include "pruner/training_bench.h"

#include <chrono>
#include <functional>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "gates/hard_concrete.h"
#include "gates/sparsity.h"
#include "models/errors.h"
#include "pruner/bench.h"
#include "pruner/distillation.h"
#include "pruner/head_costs.h"
#include "pruner/log.h"

namespace headprune::pruner {

double TrainingBenchReport::tokens_per_s(double ms) const {
  return ms > 0 ? static_cast<double>(batch * seq) / (ms / 1000.0) : 0;
}

nlohmann::json TrainingBenchReport::to_json() const {
  auto kind = [&](double ms) { return nlohmann::json{{"median_ms", ms}, {"tokens_per_s", tokens_per_s(ms)}}; };
  return {{"batch", batch},
          {"seq", seq},
          {"reps", reps},
          {"threads", threads},
          {"blas", blas},
          {"device", device},
          {"dense_forward_backward", kind(dense_ms)},
          {"gate_step", kind(gate_ms)},
          {"gate_step_cached_teacher", kind(gate_cached_ms)},
          {"gate_step_over_dense", gate_ms / dense_ms},
          {"gate_step_cached_over_dense", gate_cached_ms / dense_ms}};
}

std::string TrainingBenchReport::to_text() const {
  std::string s = fmt::format("device {}, {} threads, BLAS {}; batch {} x seq {}, median of {} "
                              "interleaved steps\n",
                              device, threads, blas.empty() ? "(not found)" : blas, batch, seq, reps);
  auto row = [&](const char* what, double ms) {
    s += fmt::format("{:<52} {:>9.1f} ms {:>9.0f} tok/s {:>7.3f}x dense\n", what, ms,
                     tokens_per_s(ms), ms / dense_ms);
  };
  row("dense forward + backward (all weights)", dense_ms);
  row("gate step: teacher fwd + gated fwd + bwd to log_alpha", gate_ms);
  row("gate step, teacher outputs cached", gate_cached_ms);
  return s;
}

TrainingBenchReport run_training_bench(models::Checkpoint& ckpt, const TrainingBenchOptions& o) {
  auto& model = *ckpt.model;
  const auto& config = model.config();
  if (o.batch < 1 || o.seq < 1 || o.reps < 1)
    throw Error("batch, seq and reps must be at least 1");
  if (o.seq > config.max_position_embeddings)
    throw Error(fmt::format("--seq {} exceeds max_position_embeddings {}", o.seq,
                            config.max_position_embeddings));
  torch::manual_seed(o.seed);
  auto ids = torch::randint(std::min<int64_t>(1000, config.vocab_size - 1), config.vocab_size,
                            {o.batch, o.seq}, torch::kLong).to(o.device);
  models::ModelInputs in{ids, torch::ones_like(ids), {}};
  model.eval();

  gates::HardConcreteGates g(config.heads_per_layer(), {});
  g.to(o.device);
  gates::Lagrangian lagrangian;
  lagrangian.to(o.device);
  torch::optim::AdamW gate_opt({g.log_alpha}, torch::optim::AdamWOptions(0.1).weight_decay(0));
  const auto measure = sparsity_measure(config, gates::SparsityUnit::kHeads, o.seq);
  torch::Tensor cached;
  {
    torch::NoGradGuard no_grad;
    cached = distillation_target(model.forward(in, nullptr));
  }
  auto sync = [&](const torch::Tensor& t) {
    if (o.device.is_cuda()) torch::cuda::synchronize();
    else (void)t.sum().item<float>();
  };
  auto set_weights_grad = [&](bool on) {
    for (auto& p : model.parameters()) {
      p.set_requires_grad(on);
      p.mutable_grad() = torch::Tensor();
    }
  };
  auto dense_step = [&] {
    set_weights_grad(true);
    auto loss = distillation_target(model.forward(in, nullptr)).pow(2).mean();
    loss.backward();
    sync(loss);
    set_weights_grad(false);
  };
  auto gate_step = [&](bool teacher_cached) {
    torch::Tensor teacher = cached;
    if (!teacher_cached) {
      torch::NoGradGuard no_grad;
      teacher = distillation_target(model.forward(in, nullptr));
    }
    auto multipliers = g.split(g.sample());
    auto loss = distillation(model.forward(in, &multipliers), teacher, in.attention_mask,
                             ckpt.pooling, 1.0).total +
                lagrangian.penalty(measure.expected(g), 0.5);
    gate_opt.zero_grad();
    loss.backward();
    gate_opt.step();
    sync(loss);
  };
  auto time_ms = [](const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  const std::vector<std::function<void()>> kinds = {dense_step, [&] { gate_step(false); },
                                                    [&] { gate_step(true); }};
  for (int i = 0; i < o.warmup; ++i)
    for (const auto& k : kinds) k();
  std::vector<std::vector<double>> ms(kinds.size());
  for (int rep = 0; rep < o.reps; ++rep) {
    for (size_t i = 0; i < kinds.size(); ++i) {
      const size_t k = (i + static_cast<size_t>(rep)) % kinds.size();  // rotate the order
      ms[k].push_back(time_ms(kinds[k]));
    }
    log::info("training bench: {}/{} rounds", rep + 1, o.reps);
  }
  TrainingBenchReport r;
  r.batch = o.batch;
  r.seq = o.seq;
  r.reps = o.reps;
  r.threads = torch::get_num_threads();
  r.blas = loaded_blas();
  r.device = o.device.str();
  r.dense_ms = percentile(ms[0], 0.5);
  r.gate_ms = percentile(ms[1], 0.5);
  r.gate_cached_ms = percentile(ms[2], 0.5);
  return r;
}

}  // namespace headprune::pruner
