#include "pruner/jobs/latency_measurement.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/json_get.h"
#include "models/loader.h"
#include "pruner/atomic_write.h"
#include "pruner/log.h"
#include "pruner/measure/bench.h"
#include "pruner/surgery/surgery.h"

namespace headprune::pruner {
namespace fs = std::filesystem;
namespace {

/// Original query heads layer l keeps in the table's model with k heads: round-robin over the
/// KV groups (BERT: heads 0..k-1), so that KV heads go last.
std::vector<int64_t> heads_removed_at(const models::ModelConfig& c, int64_t k) {
  const int64_t group = c.kv_group_size(), groups = c.num_attention_heads / group;
  std::vector<int64_t> order;
  for (int64_t j = 0; j < group; ++j)
    for (int64_t g = 0; g < groups; ++g) order.push_back(g * group + j);
  std::vector<int64_t> removed(order.begin() + k, order.end());
  std::sort(removed.begin(), removed.end());
  return removed;
}

/// A copy of `source` held in float32 throughout, as timed.
models::Checkpoint float32_copy(const models::Checkpoint& source) {
  auto copy = models::copy_checkpoint(source);
  models::widen_narrow_weights(*copy.model);
  return copy;
}

}  // namespace

namespace {

/// The checks and the bench options both measurements share. @throws headprune::Error for a pruned model.
BenchOptions timing_options(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                            const torch::Device& device) {
  const auto& c = dense.model->config();
  bool whole = c.total_heads() == c.num_attention_heads * c.num_hidden_layers;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) whole = whole && c.ffn_width(l) == c.intermediate_size;
  if (!whole)
    throw Error(fmt::format("{} is already pruned: measure the latency table on the dense model it came from",
                            dense.dir.string()));
  BenchOptions o;
  o.batches = {batch_size};
  o.seqs = {seq_len};
  o.max_reps = 15;
  o.max_seconds_per_shape = 20;
  o.device = device;
  return o;
}

/// Whole-model milliseconds of each plan's cut (`what` names it in the progress line), each timed
/// side by side with the dense model and taken as its ratio to it times the median dense time;
/// the dense median last.
std::vector<double> timed_cuts(const models::Checkpoint& dense, const std::vector<PrunePlan>& plans,
                               const std::function<std::string(std::size_t)>& what, const BenchOptions& o) {
  const auto timed = float32_copy(dense);
  std::vector<double> ms, dense_ms;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    log::info("latency table: {}", what(i));
    auto cut = models::copy_checkpoint(timed);
    apply_plan(*cut.model, plans[i]);
    const auto cell = run_bench(*timed.model, *cut.model, o).results.at(0);
    ms.push_back(cell.pruned_median_ms / cell.dense_median_ms);  // relative; scaled below
    dense_ms.push_back(cell.dense_median_ms);
  }
  const double dense_median = percentile(dense_ms, 0.5);
  for (auto& m : ms) m *= dense_median;
  ms.push_back(dense_median);
  return ms;
}

}  // namespace

std::vector<double> measure_latencies(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                      const torch::Device& device) {
  const auto o = timing_options(dense, batch_size, seq_len, device);
  const auto& c = dense.model->config();
  std::vector<PrunePlan> plans;
  for (int64_t k = 0; k < c.num_attention_heads; ++k) {
    nlohmann::json spec = nlohmann::json::object();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) spec[std::to_string(l)] = heads_removed_at(c, k);
    plans.push_back(plan_from_remove_heads(spec, c));
  }
  return timed_cuts(
      dense, plans, [&](std::size_t k) { return fmt::format("every layer at {} of {} heads", k, c.num_attention_heads); },
      o);
}

std::vector<int64_t> latency_ffn_widths(const models::ModelConfig& config) {
  std::vector<int64_t> widths;
  for (int64_t j = 0; j <= kLatencyFfnSteps; ++j) widths.push_back(j * config.intermediate_size / kLatencyFfnSteps);
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  return widths;
}

std::vector<double> measure_ffn_latencies(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                          const torch::Device& device) {
  const auto o = timing_options(dense, batch_size, seq_len, device);
  const auto& c = dense.model->config();
  const auto widths = latency_ffn_widths(c);
  std::vector<PrunePlan> plans;
  for (std::size_t j = 0; j + 1 < widths.size(); ++j) {
    PrunePlan plan(static_cast<std::size_t>(c.num_hidden_layers));
    for (auto& layer : plan)
      for (int64_t n = widths[j]; n < c.intermediate_size; ++n) layer.ffn_remove.push_back(n);
    plans.push_back(std::move(plan));
  }
  return timed_cuts(
      dense, plans,
      [&](std::size_t j) { return fmt::format("every layer's FFN at {} of {} neurons", widths[j], c.intermediate_size); },
      o);
}

namespace {

/// `table` with the FFN widths measured on `dense` (fitted like the heads'), scaled to the heads'
/// dense time (as measured; a table without its timings: as fitted) so that both parts of the
/// table share one dense model.
LatencyTable with_ffn_latencies(LatencyTable table, const models::Checkpoint& dense, const torch::Device& device) {
  table.ffn_widths = latency_ffn_widths(dense.model->config());
  table.ms_ffn_measured = measure_ffn_latencies(dense, table.batch_size, table.seq_len, device);
  const double dense_ms = table.ms_measured.empty() ? table.ms_by_heads.back() : table.ms_measured.back();
  const double scale = dense_ms / table.ms_ffn_measured.back();
  for (auto& ms : table.ms_ffn_measured) ms *= scale;
  table.ms_by_ffn_width = fitted_latencies(
      table.ms_ffn_measured, std::vector<double>(table.ffn_widths.begin(), table.ffn_widths.end()));
  return table;
}

}  // namespace

LatencyTable measure_latency_table(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                   const torch::Device& device, bool with_ffn) {
  const auto& config = dense.model->config();
  LatencyTable t{machine_fingerprint(device), architecture_fingerprint(config), batch_size, seq_len, {}, {}, {}, {}, {}};
  t.ms_measured = measure_latencies(dense, batch_size, seq_len, device);
  t.ms_by_heads = fitted_latencies(t.ms_measured);
  return with_ffn ? with_ffn_latencies(std::move(t), dense, device) : t;
}

LatencyTable latency_table_for(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                               const torch::Device& device, const fs::path& given, bool with_ffn) {
  const auto& config = dense.model->config();
  const auto file = given.empty() ? default_latency_table_file(config, batch_size, seq_len, device) : given;
  std::optional<LatencyTable> table;
  if (fs::exists(file)) {
    table = read_latency_table(file, config, batch_size, seq_len, device);
    if (!with_ffn || table->prices_ffn()) return *table;
    log::info("the latency table prices heads only: measuring its FFN widths at batch {} x seq {} (once; added to {})",
              batch_size, seq_len, file.string());
    table = with_ffn_latencies(std::move(*table), dense, device);
  } else {
    log::info("measuring the latency table at batch {} x seq {} (once; cached in {})", batch_size, seq_len,
              file.string());
    table = measure_latency_table(dense, batch_size, seq_len, device, with_ffn);
  }
  fs::create_directories(file.parent_path());
  write_file_atomic(file, table->to_json().dump(2) + "\n");
  return *table;
}

void provide_latency_table(GateTrainingOptions& options, const models::Checkpoint& dense, const ProcessGroup& group) {
  if (!options.target_latency || options.latency_table) return;
  // Every rank would time the model at once unless a given file already holds what the run prices.
  const auto ready = [&] {
    const auto& file = options.latency_table_file;
    return !file.empty() && fs::exists(file) &&
           (!options.gates_ffn() || LatencyTable::from_json(models::read_json_file(file), file).prices_ffn());
  };
  if (group.world_size() > 1 && !ready())
    throw Error("--target-latency with several processes: every rank would time the model at once; measure the "
                "table in one process first (e.g. a train-gates run with --steps 1 and the same --prune) and pass "
                "it with --latency-table FILE");
  options.latency_table = std::make_shared<const LatencyTable>(
      latency_table_for(dense, options.latency_batch_size, options.latency_seq_len, options.device,
                        options.latency_table_file, options.gates_ffn()));
}

}  // namespace headprune::pruner
