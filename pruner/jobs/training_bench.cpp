#include "pruner/jobs/training_bench.h"

#include <chrono>
#include <functional>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "gates/hard_concrete.h"
#include "gates/sparsity.h"
#include "models/errors.h"
#include "models/model_size.h"
#include "pruner/log.h"
#include "pruner/measure/bench.h"
#include "pruner/measure/process_memory.h"
#include "pruner/objectives/chunked_kl.h"
#include "pruner/objectives/distillation.h"
#include "pruner/training/sparsity_measure.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {

double TrainingBenchReport::tokens_per_s(double ms) const {
  return ms > 0 ? static_cast<double>(batch * seq) / (ms / 1000.0) : 0;
}

nlohmann::json TrainingMemory::to_json() const {
  return {{"load_peak_bytes", load_peak},
          {"resting_bytes", resting},
          {"weights_bytes", weights},
          {"optimiser_state_bytes", optimiser},
          {"step_peak_above_resting_bytes",
           {{"dense_forward_backward", dense_step}, {"gate_step", gate_step}, {"gate_step_cached_teacher", gate_cached_step}}},
          {"peak_reset", peak_reset}};
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
          {"gate_step_cached_over_dense", gate_cached_ms / dense_ms},
          {"kl_chunk_tokens", kl_chunk_tokens}});
  if (memory) j["memory"] = memory->to_json();
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
  if (kl_chunk_tokens > 0) s += fmt::format("(the gate steps' KL over the vocabulary {} tokens at a time)\n", kl_chunk_tokens);
  if (!memory) return s;
  const auto& m = *memory;
  auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  s += fmt::format("resident memory{}: after loading (peak) {:.0f} MiB; between steps {:.0f} MiB, of which weights "
                   "{:.0f} MiB, gate optimiser state {:.3f} MiB\n",
                   m.peak_reset ? "" : " (peaks since the start: /proc/self/clear_refs refused)", mib(m.load_peak),
                   mib(m.resting), mib(m.weights), mib(m.optimiser));
  auto peak = [&](const char* what, int64_t bytes) {
    s += fmt::format("  peak during {:<40} +{:.0f} MiB (activations, gradients, temporaries) = {:.0f} MiB\n", what,
                     mib(bytes), mib(m.resting + bytes));
  };
  peak("a dense forward + backward", m.dense_step);
  peak("a gate step", m.gate_step);
  peak("a gate step, teacher cached", m.gate_cached_step);
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
        measure_(sparsity_measure(model_.config(), gates::SparsityUnit::kHeads, o.seq)),
        chunked_(chunked_lm_head(model_, model_, o.batch * o.seq, o.kl_chunk_tokens)) {
    model_.eval();
    gates_.to(device_);
    lagrangian_.to(device_);
    torch::NoGradGuard no_grad;
    const ScopedLogitsOff logits_off({&model_}, chunked_.has_value());
    cached_ = distillation_target(model_.forward(in_, nullptr));
  }

  int64_t kl_chunk_tokens() const { return chunked_ ? chunked_->chunk_tokens : 0; }
  /// AdamW's two moments of log_alpha, bytes.
  int64_t optimiser_bytes() const { return 2 * gates_.log_alpha.numel() * gates_.log_alpha.element_size(); }

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
    const ScopedLogitsOff logits_off({&model_}, chunked_.has_value());
    torch::Tensor teacher = cached_;
    if (!teacher_cached) {
      torch::NoGradGuard no_grad;
      teacher = distillation_target(model_.forward(in_, nullptr));
    }
    auto multipliers = gates_.split(gates_.sample());
    auto loss = distillation(model_.forward(in_, &multipliers), teacher, in_.attention_mask, ckpt_.pooling, 1.0, {},
                             chunked_ ? &*chunked_ : nullptr).total +
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
  std::optional<ChunkedLmHead> chunked_;
  torch::Tensor cached_;
};

/// Bytes of the model's parameters and buffers as held.
int64_t model_bytes(const torch::nn::Module& model) {
  int64_t bytes = 0;
  for (const auto& p : model.parameters()) bytes += p.numel() * p.element_size();
  for (const auto& b : model.buffers()) bytes += b.numel() * b.element_size();
  return bytes;
}

/// Each kind once more, untimed: its peak resident memory above the resting process.
TrainingMemory measure_memory(const std::vector<std::function<void()>>& kinds, const models::AttentionModel& model,
                              int64_t optimiser_bytes, int64_t load_peak) {
  TrainingMemory m;
  m.load_peak = load_peak;
  m.weights = model_bytes(model);
  m.optimiser = optimiser_bytes;
  std::vector<int64_t> peaks;
  for (const auto& kind : kinds) {
    m.peak_reset = reset_peak_resident() && m.peak_reset;
    const int64_t resting = resident_bytes();
    kind();
    peaks.push_back(std::max<int64_t>(0, peak_resident_bytes() - resting));
    m.resting = std::max(m.resting, resting);
  }
  m.dense_step = peaks.at(0);
  m.gate_step = peaks.at(1);
  m.gate_cached_step = peaks.at(2);
  return m;
}

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
  const int64_t load_peak = peak_resident_bytes();
  ckpt.model->set_checkpoint_layers(GateTrainingOptions::checkpoints(o.checkpoint_layers, models::parameter_count(*ckpt.model)));
  StepKinds steps(ckpt, o);
  const std::vector<std::function<void()>> kinds = {
      [&] { steps.dense_step(); }, [&] { steps.gate_step(false); }, [&] { steps.gate_step(true); }};
  const auto medians = interleaved_medians(kinds, o.warmup, o.reps);
  TrainingBenchReport r;
  r.batch = o.batch;
  r.seq = o.seq;
  r.reps = o.reps;
  r.threads = current_thread_pools();
  r.device = o.device.str();
  r.dense_ms = medians[0];
  r.gate_ms = medians[1];
  r.gate_cached_ms = medians[2];
  r.kl_chunk_tokens = steps.kl_chunk_tokens();
  if (o.memory) r.memory = measure_memory(kinds, *ckpt.model, steps.optimiser_bytes(), load_peak);
  return r;
}

}  // namespace headprune::pruner
