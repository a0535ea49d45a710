// Measuring a latency table (`--target-latency`): the dense model timed side by side with copies
// of it cut to k heads in every layer. A job measures it once (or reads the cached file) and hands
// it to gate training in GateTrainingOptions::latency_table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/distributed/process_group.h"
#include "pruner/measure/latency_table.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {

/// Times `dense` with every layer cut to its first k heads (GQA: query heads spread over the KV
/// groups, so that KV heads stay as long as possible), k = 0 .. heads - 1, each side by side with
/// the dense model at batch_size × seq_len (pruner/measure/bench.h), on float32 copies of `dense`
/// (models/loader.h copy_checkpoint; `dense` itself is not changed); each entry is its ratio to
/// the dense model times the median dense time, which is the last entry (k = heads). Progress on
/// stderr. @returns [heads + 1] milliseconds, as measured (unfitted).
/// @throws headprune::Error if the model is already pruned or the shape is out of range.
std::vector<double> measure_latencies(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                      const torch::Device& device);

/// How many steps of intermediate_size / kLatencyFfnSteps a table's FFN widths take (0 .. whole).
constexpr int64_t kLatencyFfnSteps = 8;

/// The FFN widths a latency table times for `config`: j · intermediate_size / kLatencyFfnSteps,
/// j = 0 .. kLatencyFfnSteps (duplicates of a narrow FFN dropped).
std::vector<int64_t> latency_ffn_widths(const models::ModelConfig& config);

/// Times `dense` with every layer's FFN cut to its first w neurons (every head kept), for each w of
/// latency_ffn_widths but the last, side by side with the dense model as measure_latencies does.
/// @returns milliseconds per width, the dense model's (whole FFN) last, as measured (unfitted).
/// @throws headprune::Error as measure_latencies does.
std::vector<double> measure_ffn_latencies(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                          const torch::Device& device);

/// measure_latencies, fitted (fitted_latencies), with this machine and the model's architecture;
/// `with_ffn`: its FFN widths too (measure_ffn_latencies, scaled to the heads' dense time and fitted).
/// @throws headprune::Error as those do.
LatencyTable measure_latency_table(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                                   const torch::Device& device, bool with_ffn = false);

/// The table for `dense` at batch_size × seq_len on this machine: read from `file` when it exists
/// (read_latency_table), else measured and written there (atomically). An empty `file` is the
/// default cache file (default_latency_table_file). `with_ffn` (--prune heads,ffn): a table read
/// without FFN widths has them measured and the file rewritten with them.
/// @throws headprune::Error as read_latency_table and measure_latency_table do.
LatencyTable latency_table_for(const models::Checkpoint& dense, int64_t batch_size, int64_t seq_len,
                               const torch::Device& device, const std::filesystem::path& file = {},
                               bool with_ffn = false);

/// Sets `options.latency_table` for a --target-latency run that has none: latency_table_for the
/// checkpoint about to train (still dense) at options' latency shape and file, with FFN widths
/// when the run gates FFN blocks.
/// @throws headprune::Error in a data-parallel `group` when the table would have to be measured
///         (every rank would time the model at once), or as latency_table_for does.
void provide_latency_table(GateTrainingOptions& options, const models::Checkpoint& dense,
                           const ProcessGroup& group = ProcessGroup());

}  // namespace headprune::pruner
