#include "pruner/jobs/latency_measurement.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
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

std::vector<double> measure_latencies(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                      const torch::Device& device) {
  const auto& c = dense.model->config();
  if (c.total_heads() != c.num_attention_heads * c.num_hidden_layers)
    throw Error(fmt::format("{} is already pruned: measure the latency table on the dense model it came from",
                            dense.dir.string()));
  BenchOptions o;
  o.batches = {batch_size};
  o.seqs = {seq_len};
  o.max_reps = 15;
  o.max_seconds_per_shape = 20;
  o.device = device;
  const auto timed = float32_copy(dense);
  std::vector<double> ms, dense_ms;
  for (int64_t k = 0; k < c.num_attention_heads; ++k) {
    log::info("latency table: every layer at {} of {} heads", k, c.num_attention_heads);
    auto cut = models::copy_checkpoint(timed);
    nlohmann::json spec = nlohmann::json::object();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) spec[std::to_string(l)] = heads_removed_at(c, k);
    apply_plan(*cut.model, plan_from_remove_heads(spec, c));
    const auto cell = run_bench(*timed.model, *cut.model, o).results.at(0);
    ms.push_back(cell.pruned_median_ms / cell.dense_median_ms);  // relative; scaled below
    dense_ms.push_back(cell.dense_median_ms);
  }
  const double dense_median = percentile(dense_ms, 0.5);
  for (auto& m : ms) m *= dense_median;
  ms.push_back(dense_median);
  return ms;
}

LatencyTable measure_latency_table(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                   const torch::Device& device) {
  const auto& config = dense.model->config();
  LatencyTable t{machine_fingerprint(device), architecture_fingerprint(config), batch_size, seq_len, {}, {}};
  t.ms_measured = measure_latencies(dense, batch_size, seq_len, device);
  t.ms_by_heads = fitted_latencies(t.ms_measured);
  return t;
}

LatencyTable latency_table_for(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                               const torch::Device& device, const fs::path& given) {
  const auto& config = dense.model->config();
  const auto file = given.empty() ? default_latency_table_file(config, batch_size, seq_len, device) : given;
  if (fs::exists(file)) return read_latency_table(file, config, batch_size, seq_len, device);
  log::info("measuring the latency table at batch {} x seq {} (once; cached in {})", batch_size, seq_len,
            file.string());
  const auto table = measure_latency_table(dense, batch_size, seq_len, device);
  fs::create_directories(file.parent_path());
  write_file_atomic(file, table.to_json().dump(2) + "\n");
  return table;
}

void provide_latency_table(GateTrainingOptions& options, const models::Checkpoint& dense, const ProcessGroup& group) {
  if (!options.target_latency || options.latency_table) return;
  if (group.world_size() > 1 &&
      (options.latency_table_file.empty() || !fs::exists(options.latency_table_file)))
    throw Error("--target-latency with several processes: every rank would time the model at once; measure the "
                "table in one process first (e.g. a train-gates run with --steps 1) and pass it with "
                "--latency-table FILE");
  options.latency_table = std::make_shared<const LatencyTable>(latency_table_for(
      dense, options.latency_batch_size, options.latency_seq_len, options.device, options.latency_table_file));
}

}  // namespace headprune::pruner
