#include "pruner/measure/bench.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/flops.h"
#include "pruner/log.h"

namespace headprune::pruner {

std::string RepeatRule::describe() const {
  return fmt::format("{}, then {}-{} timed pairs, at most ~{:g} s",
                     warmup > 0 ? fmt::format("{} warm-up call{} each", warmup, warmup > 1 ? "s" : "") : "no warm-up",
                     min_reps, max_reps, max_seconds);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) throw Error("percentile of an empty sample");
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

namespace {

double time_forward_ms(models::AttentionModel& model, const models::ModelInputs& in,
                       const torch::Device& device) {
  const auto t0 = std::chrono::steady_clock::now();
  auto out = model.forward(in, nullptr).last_hidden_state;
  if (device.is_cuda()) torch::cuda::synchronize();
  else (void)out.sum().item<float>();  // make sure the work is done
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool stable(const std::vector<double>& v, double spread) {
  const double med = percentile(v, 0.5);
  return med > 0 && (percentile(v, 0.75) - percentile(v, 0.25)) / med < spread;
}

}  // namespace

std::pair<std::vector<double>, std::vector<double>> time_alternately(const std::function<double()>& dense,
                                                                     const std::function<double()>& pruned,
                                                                     const RepeatRule& rule) {
  for (int i = 0; i < rule.warmup; ++i) {
    dense();
    pruned();
  }
  std::vector<double> d, p;
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < rule.max_reps; ++rep) {
    if (rep % 2 == 0) {
      d.push_back(dense());
      p.push_back(pruned());
    } else {
      p.push_back(pruned());
      d.push_back(dense());
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rep + 1 >= rule.min_reps &&
        ((stable(d, rule.stable_spread) && stable(p, rule.stable_spread)) || elapsed > rule.max_seconds))
      break;
  }
  return {d, p};
}

nlohmann::json BenchCell::to_json() const {
  return {{"batch_size", batch},
          {"seq_len", seq},
          {"reps", reps},
          {"dense_ms", {{"median", dense_median_ms}, {"p25", dense_p25_ms}, {"p75", dense_p75_ms}}},
          {"pruned_ms", {{"median", pruned_median_ms}, {"p25", pruned_p25_ms}, {"p75", pruned_p75_ms}}},
          {"dense_tokens_per_s", dense_tokens_per_s},
          {"pruned_tokens_per_s", pruned_tokens_per_s},
          {"speedup", speedup},
          {"flops_ratio", flops_ratio},
          {"efficiency", efficiency}};
}

BenchPlatform BenchPlatform::current(const torch::Device& device) {
  return {current_thread_pools(), TORCH_VERSION, device.str()};
}

nlohmann::json BenchPlatform::to_json() const {
  auto j = threads.to_json();
  j.update({{"torch_version", torch_version}, {"device", device}});
  return j;
}

std::string BenchPlatform::describe() const {
  return fmt::format("device {}, {}, LibTorch {}, BLAS {}", device, threads.describe(), torch_version,
                     threads.describe_blas());
}

nlohmann::json BenchReport::to_json() const {
  auto j = platform.with_results(results);
  j["models"] = {{"dense", pruner::to_json(dense)}, {"pruned", pruner::to_json(pruned)}};
  return j;
}

std::string BenchReport::to_text() const {
  std::string s = platform.describe() + "\n";
  s += fmt::format("dense:  {}\npruned: {}\n", composition(dense), composition(pruned));
  s += "batch   seq |  dense ms (p25-p75)     |  pruned ms (p25-p75)    | speedup | FLOPs ratio | efficiency | tokens/s dense -> pruned\n";
  for (const auto& c : results)
    s += fmt::format("{:>5} {:>5} | {:>9.2f} ({:.2f}-{:.2f}) | {:>9.2f} ({:.2f}-{:.2f}) | {:>6.3f}x | {:>10.3f}x | {:>9.1f}% | {:.0f} -> {:.0f}\n",
                     c.batch, c.seq, c.dense_median_ms, c.dense_p25_ms, c.dense_p75_ms,
                     c.pruned_median_ms, c.pruned_p25_ms, c.pruned_p75_ms, c.speedup,
                     c.flops_ratio, 100 * c.efficiency, c.dense_tokens_per_s, c.pruned_tokens_per_s);
  return s;
}

BenchReport run_bench(models::AttentionModel& dense, models::AttentionModel& pruned,
                      const BenchOptions& o) {
  if (o.batches.empty() || o.seqs.empty()) throw Error("the benchmark grid is empty");
  const int64_t max_seq = std::min(dense.config().usable_positions(), pruned.config().usable_positions());
  for (auto s : o.seqs)
    if (s < 1 || s > max_seq)
      throw Error(fmt::format("sequence length {} is outside 1..{} (the positions the model has)", s, max_seq));
  for (auto b : o.batches)
    if (b < 1) throw Error(fmt::format("batch size {} must be >= 1", b));
  BenchReport report;
  report.platform = BenchPlatform::current(o.device);
  const auto longest = *std::max_element(o.seqs.begin(), o.seqs.end());
  report.dense = summarize(dense, longest);
  report.pruned = summarize(pruned, longest);
  dense.eval();
  pruned.eval();
  torch::NoGradGuard no_grad;
  const int64_t vocab = std::min(dense.config().vocab_size, pruned.config().vocab_size);
  const std::size_t shapes = o.seqs.size() * o.batches.size();
  for (auto seq : o.seqs) {
    for (auto batch : o.batches) {
      log::info("bench shape {}/{}: batch {} x seq {} ({})...", report.results.size() + 1, shapes, batch, seq,
                o.repeat_rule().describe());
      torch::manual_seed(o.seed);
      auto ids = torch::randint(std::min<int64_t>(1000, vocab - 1), vocab, {batch, seq}, torch::kLong)
                     .to(o.device);
      models::ModelInputs in{ids, torch::ones_like(ids), {}};
      const auto [d, p] = time_alternately([&] { return time_forward_ms(dense, in, o.device); },
                                           [&] { return time_forward_ms(pruned, in, o.device); }, o.repeat_rule());
      BenchCell c;
      c.batch = batch;
      c.seq = seq;
      c.reps = static_cast<int>(d.size());
      c.dense_median_ms = percentile(d, 0.5);
      c.dense_p25_ms = percentile(d, 0.25);
      c.dense_p75_ms = percentile(d, 0.75);
      c.pruned_median_ms = percentile(p, 0.5);
      c.pruned_p25_ms = percentile(p, 0.25);
      c.pruned_p75_ms = percentile(p, 0.75);
      const double tokens = static_cast<double>(batch * seq);
      c.dense_tokens_per_s = tokens / (c.dense_median_ms / 1000);
      c.pruned_tokens_per_s = tokens / (c.pruned_median_ms / 1000);
      c.speedup = c.dense_median_ms / c.pruned_median_ms;
      c.flops_ratio = models::forward_flops_per_token(dense.config(), seq) /
                      models::forward_flops_per_token(pruned.config(), seq);
      c.efficiency = c.speedup / c.flops_ratio;
      log::info("bench batch {:>2} seq {:>3}: dense {:.2f} ms, pruned {:.2f} ms, speedup {:.3f}x "
                "(FLOPs ratio {:.3f}x) over {} reps",
                batch, seq, c.dense_median_ms, c.pruned_median_ms, c.speedup, c.flops_ratio, c.reps);
      report.results.push_back(c);
    }
  }
  return report;
}

}  // namespace headprune::pruner
