#include "pruner/measure/decode_bench.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/kv_cache.h"
#include "models/model_family.h"
#include "pruner/format.h"
#include "pruner/log.h"
#include "pruner/measure/process_memory.h"

namespace headprune::pruner {
namespace {

/// What one rep of one model measured.
struct DecodeRun {
  double prefill_ms = 0, step_ms = 0;
  int64_t kv_bytes = 0;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Prefills `prompt` [batch, context] into an empty cache, then decodes steps[i] [batch, 1] one
/// after the other. The logits are read back after each phase so that the work is done.
DecodeRun decode_once(models::AttentionModel& model, const torch::Tensor& prompt, const std::vector<torch::Tensor>& steps,
                      const torch::Device& device) {
  auto finish = [&](const torch::Tensor& logits) {
    if (device.is_cuda()) torch::cuda::synchronize();
    else (void)logits.sum().item<float>();
  };
  models::KvCache cache;
  DecodeRun run;
  auto t0 = std::chrono::steady_clock::now();
  finish(model.forward_cached(prompt, cache));
  run.prefill_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  torch::Tensor logits;
  for (const auto& step : steps) logits = model.forward_cached(step, cache);
  finish(logits);
  run.step_ms = ms_since(t0) / static_cast<double>(steps.size());
  run.kv_bytes = models::held_bytes(cache);
  return run;
}

/// The resident memory one untimed rep of `model` adds at its peak (DecodeSide::peak_working_bytes).
int64_t peak_working_bytes(models::AttentionModel& model, const torch::Tensor& prompt,
                           const std::vector<torch::Tensor>& steps, const torch::Device& device) {
  if (device.is_cuda() || !reset_peak_resident()) return 0;
  const int64_t before = resident_bytes();
  decode_once(model, prompt, steps, device);
  return std::max<int64_t>(0, peak_resident_bytes() - before);
}

/// One model's side from its runs, the last step_ms.size() of which were timed (the first are
/// the warm-up's).
DecodeSide side_of(const std::vector<DecodeRun>& runs, const std::vector<double>& step_ms, int64_t batch) {
  std::vector<double> prefill;
  for (auto r = runs.end() - static_cast<std::ptrdiff_t>(step_ms.size()); r != runs.end(); ++r)
    prefill.push_back(r->prefill_ms);
  DecodeSide s;
  s.prefill_ms = percentile(prefill, 0.5);
  s.decode_ms_per_token = percentile(step_ms, 0.5);
  s.decode_p25_ms = percentile(step_ms, 0.25);
  s.decode_p75_ms = percentile(step_ms, 0.75);
  s.decode_tokens_per_s = static_cast<double>(batch) / (s.decode_ms_per_token / 1000);
  s.kv_cache_bytes = runs.back().kv_bytes;
  return s;
}

/// The bytes an average step of `side` read: the weights, and the cache it held after its last
/// step (every position of every sequence) scaled to the mean position of the decoding steps.
double bytes_read(const models::AttentionModel& model, const DecodeSide& side, int64_t context, int64_t new_tokens) {
  const double held_positions = static_cast<double>(context + new_tokens);
  const double mean_positions = static_cast<double>(context) + static_cast<double>(new_tokens) / 2;
  return static_cast<double>(decode_weight_bytes(model)) +
         static_cast<double>(side.kv_cache_bytes) * mean_positions / held_positions;
}

void check_grid(const models::AttentionModel& dense, const models::AttentionModel& pruned, const DecodeBenchOptions& o) {
  if (o.batches.empty() || o.contexts.empty()) throw Error("the decode benchmark grid is empty");
  for (const auto* model : {&dense, &pruned})
    if (!model->config().family().has_lm_head())
      throw Error(fmt::format("a '{}' model is an encoder: decoding needs a language model with a KV cache",
                              model->config().model_type));
  if (o.new_tokens < 1) throw Error(fmt::format("new tokens {} must be >= 1", o.new_tokens));
  const int64_t positions =
      std::min(dense.config().max_position_embeddings, pruned.config().max_position_embeddings);
  for (auto c : o.contexts)
    if (c < 1 || c + o.new_tokens > positions)
      throw Error(fmt::format("context {} with {} new tokens is outside the model's {} positions "
                              "(max_position_embeddings)",
                              c, o.new_tokens, positions));
  for (auto b : o.batches)
    if (b < 1) throw Error(fmt::format("batch size {} must be >= 1", b));
}

/// Measures one (batch, context) cell (run_decode_bench).
DecodeCell measure_cell(models::AttentionModel& dense, models::AttentionModel& pruned, const DecodeBenchOptions& o,
                        int64_t batch, int64_t context) {
  const int64_t vocab = std::min(dense.config().vocab_size, pruned.config().vocab_size);
  torch::manual_seed(o.seed);
  const auto random_ids = [&](int64_t t) {
    return torch::randint(std::min<int64_t>(1000, vocab - 1), vocab, {batch, t}, torch::kLong).to(o.device);
  };
  const auto prompt = random_ids(context);
  std::vector<torch::Tensor> steps;
  for (int64_t i = 0; i < o.new_tokens; ++i) steps.push_back(random_ids(1));
  std::vector<DecodeRun> dense_runs, pruned_runs;
  const auto timed = [&](models::AttentionModel& model, std::vector<DecodeRun>& runs) {
    runs.push_back(decode_once(model, prompt, steps, o.device));
    return runs.back().step_ms;
  };
  const auto [d, p] = time_alternately([&] { return timed(dense, dense_runs); },
                                       [&] { return timed(pruned, pruned_runs); }, o.repeat);
  DecodeCell c;
  c.batch = batch;
  c.context = context;
  c.new_tokens = o.new_tokens;
  c.reps = static_cast<int>(d.size());
  c.dense = side_of(dense_runs, d, batch);
  c.pruned = side_of(pruned_runs, p, batch);
  c.dense.peak_working_bytes = peak_working_bytes(dense, prompt, steps, o.device);
  c.pruned.peak_working_bytes = peak_working_bytes(pruned, prompt, steps, o.device);
  c.dense.bytes_read_per_step = bytes_read(dense, c.dense, context, o.new_tokens);
  c.pruned.bytes_read_per_step = bytes_read(pruned, c.pruned, context, o.new_tokens);
  c.prefill_speedup = c.dense.prefill_ms / c.pruned.prefill_ms;
  c.decode_speedup = c.dense.decode_ms_per_token / c.pruned.decode_ms_per_token;
  c.bytes_ratio = c.dense.bytes_read_per_step / c.pruned.bytes_read_per_step;
  log::info("decode bench batch {} context {}: {:.2f} -> {:.2f} ms/step ({:.3f}x; bytes ratio {:.3f}x), "
            "prefill {:.3f}x, over {} reps",
            batch, context, c.dense.decode_ms_per_token, c.pruned.decode_ms_per_token, c.decode_speedup,
            c.bytes_ratio, c.prefill_speedup, c.reps);
  return c;
}

}  // namespace

int64_t decode_weight_bytes(const models::AttentionModel& model) {
  const auto& c = model.config();
  const auto lm_head = model.lm_head_weight();
  int64_t bytes = 0;
  for (const auto& p : model.parameters()) {
    const bool input_embedding = p.dim() == 2 && p.size(0) == c.vocab_size && p.size(1) == c.hidden_size &&
                                 !(lm_head.defined() && p.is_same(lm_head));
    bytes += input_embedding ? p.size(1) * static_cast<int64_t>(p.element_size()) : static_cast<int64_t>(p.nbytes());
  }
  return bytes;
}

nlohmann::json DecodeSide::to_json() const {
  return {{"prefill_ms", prefill_ms},
          {"decode_ms_per_token", {{"median", decode_ms_per_token}, {"p25", decode_p25_ms}, {"p75", decode_p75_ms}}},
          {"decode_tokens_per_s", decode_tokens_per_s},
          {"kv_cache_bytes", kv_cache_bytes},
          {"bytes_read_per_step", bytes_read_per_step},
          {"peak_working_bytes", peak_working_bytes}};
}

nlohmann::json DecodeCell::to_json() const {
  return {{"batch_size", batch},   {"context", context},
          {"new_tokens", new_tokens}, {"reps", reps},
          {"dense", dense.to_json()}, {"pruned", pruned.to_json()},
          {"prefill_speedup", prefill_speedup}, {"decode_speedup", decode_speedup},
          {"bytes_ratio", bytes_ratio}};
}

nlohmann::json DecodeReport::to_json() const { return platform.with_results(results); }

std::string DecodeReport::to_text() const {
  std::string s = platform.describe() + "\n";
  s += "batch context  new | prefill ms dense -> pruned (speedup) | ms/step dense -> pruned | decode speedup | "
       "bytes ratio | KV cache dense -> pruned | peak working memory dense -> pruned | tokens/s dense -> pruned\n";
  for (const auto& c : results)
    s += fmt::format("{:>5} {:>7} {:>4} | {:>10.1f} -> {:<10.1f} ({:.3f}x) | {:>8.2f} -> {:<8.2f} | {:>13.3f}x | "
                     "{:>10.3f}x | {:>9} -> {:<9} | {:>9} -> {:<9} | {:.1f} -> {:.1f}\n",
                     c.batch, c.context, c.new_tokens, c.dense.prefill_ms, c.pruned.prefill_ms, c.prefill_speedup,
                     c.dense.decode_ms_per_token, c.pruned.decode_ms_per_token, c.decode_speedup, c.bytes_ratio,
                     human_bytes(static_cast<std::uintmax_t>(c.dense.kv_cache_bytes)),
                     human_bytes(static_cast<std::uintmax_t>(c.pruned.kv_cache_bytes)),
                     human_bytes(static_cast<std::uintmax_t>(c.dense.peak_working_bytes)),
                     human_bytes(static_cast<std::uintmax_t>(c.pruned.peak_working_bytes)), c.dense.decode_tokens_per_s,
                     c.pruned.decode_tokens_per_s);
  return s;
}

DecodeReport run_decode_bench(models::AttentionModel& dense, models::AttentionModel& pruned,
                              const DecodeBenchOptions& o) {
  check_grid(dense, pruned, o);
  DecodeReport report;
  report.platform = BenchPlatform::current(o.device);
  dense.eval();
  pruned.eval();
  torch::NoGradGuard no_grad;
  const std::size_t shapes = o.contexts.size() * o.batches.size();
  for (auto context : o.contexts) {
    for (auto batch : o.batches) {
      log::info("decode bench {}/{}: batch {}, context {}, then {} new tokens ({})...", report.results.size() + 1,
                shapes, batch, context, o.new_tokens, o.repeat.describe());
      report.results.push_back(measure_cell(dense, pruned, o, batch, context));
    }
  }
  return report;
}

}  // namespace headprune::pruner
