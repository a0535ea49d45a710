// A latency budget's price list (`--target-latency`): how long the model takes with k heads in
// every layer (and, for --prune heads,ffn, with every layer's FFN at a few widths), measured once
// on this machine at one batch × sequence shape and cached.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "gates/sparsity.h"
#include "models/attention_model.h"

namespace headprune::pruner {

/// Whole-model forward latency with every layer at k heads, k = 0 .. num_attention_heads.
/// Kwon et al. 2022 (§4.1) time each layer at each head count once and price masks from the
/// table; here each entry is the whole model timed side by side with the dense one (pruner/
/// measure/bench.h: interleaved, median; pruner/jobs/latency_measurement.h), so a layer with k heads costs
///   layer_ms(k) = (ms_by_heads[k] − ms_by_heads[0]) / num_hidden_layers
/// and a mask keeping k_l heads in layer l is predicted to take ms_by_heads[0] + Σ_l layer_ms(k_l).
/// ms_by_heads is fitted_latencies(ms_measured): k = 0 as measured, k ≥ 1 on a least-squares line
/// (Kwon et al. found latency linear in heads above a threshold). Single timings are noisy, and
/// a flat stretch in a raw table would give the gates no gradient there.
///
/// FFN widths (--prune heads,ffn; Kwon et al. §4.1 time FFN neurons the same way) are priced
/// alike from whole-model timings with every layer's FFN at ffn_widths[j] neurons and every head
/// kept: an FFN of width w costs ffn_layer_ms(w) = (ms(w) − ms(0)) / num_hidden_layers, ms
/// interpolated linearly between the table's widths, and a model with FFN widths w_l is predicted
/// to take Σ_l (ffn_layer_ms(w_l) − ffn_layer_ms(intermediate_size)) less than its heads alone
/// say: the two tables add, as a layer's attention and FFN run one after the other.
struct LatencyTable {
  std::string machine;      ///< machine_fingerprint() where it was measured
  nlohmann::json model;     ///< architecture_fingerprint() of the model it was measured on
  int64_t batch_size = 1;
  int64_t seq_len = 128;
  std::vector<double> ms_by_heads;  ///< milliseconds per forward pass, [num_attention_heads + 1]
  std::vector<double> ms_measured;  ///< the timings it was fitted to (for the record)
  /// FFN widths timed, ascending from 0 to intermediate_size; empty: the table prices heads only.
  std::vector<int64_t> ffn_widths;
  std::vector<double> ms_by_ffn_width;   ///< milliseconds per forward pass at each of ffn_widths (fitted)
  std::vector<double> ms_ffn_measured;   ///< the timings those were fitted to (for the record)

  /// Whether the table holds FFN widths (what --target-latency with --prune heads,ffn needs).
  bool prices_ffn() const { return !ffn_widths.empty(); }
  /// Predicted milliseconds of a model keeping heads_per_layer[l] heads in layer l and, when
  /// ffn_width_per_layer is given, an FFN of ffn_width_per_layer[l] neurons there (else whole).
  /// @throws headprune::Error for FFN widths from a table without them, or widths outside it.
  double predicted_ms(const std::vector<int64_t>& heads_per_layer,
                      const std::vector<int64_t>& ffn_width_per_layer = {}) const;
  /// predicted_ms of `config`'s heads and, when the table prices FFN widths, its FFN widths.
  double predicted_ms_of(const models::ModelConfig& config) const;
  /// The measure a latency budget trains against: layer_cost[l][k] = layer_ms(k) for k up to the
  /// heads present in layer l, total = Σ_l layer_ms(heads present) (what removing every head saves).
  gates::SparsityMeasure measure(const models::ModelConfig& config) const;
  /// `heads` (this table's measure(config)) extended to FFN blocks of `ffn_block` neurons, for the
  /// unit layout of pruner/training/gate_units.h: one more cost table per layer after the heads',
  /// layer_cost[L + l][b] = ffn_layer_ms(b · ffn_block) for b = 0 .. blocks_per_layer[l]; the
  /// total gains what removing every block saves.
  /// @throws headprune::Error if the table has no FFN widths (measure them: latency_table_for).
  gates::SparsityMeasure with_ffn_costs(gates::SparsityMeasure heads, const std::vector<int64_t>& blocks_per_layer,
                                        int64_t ffn_block) const;

  nlohmann::json to_json() const;
  /// @throws headprune::Error naming `source` for a malformed table.
  static LatencyTable from_json(const nlohmann::json& j, const std::string& source);
};

/// The table a latency budget prices with, from whole-model timings at k = 0 .. H heads per
/// layer: entry 0 as measured (no attention at all), entries 1 .. H on the least-squares line
/// through the measured ones (kept non-decreasing).
/// @throws headprune::Error if that line does not rise (noise larger than a head's cost).
std::vector<double> fitted_latencies(const std::vector<double>& measured);
/// The same fit over any ascending x (FFN widths): entry 0 as measured at x[0], the others on
/// the least-squares line through the rest. @throws headprune::Error as fitted_latencies does.
std::vector<double> fitted_latencies(const std::vector<double>& measured, const std::vector<double>& x);

/// This process's machine as timings depend on it: CPU model (/proc/cpuinfo), logical CPUs,
/// LibTorch and BLAS threads, LibTorch version and device, e.g.
/// "AMD EPYC 7B13 | 2 logical CPUs | 1 LibTorch thread, 2 BLAS threads | LibTorch 1.13.1 | cpu".
std::string machine_fingerprint(const torch::Device& device);

/// What a latency table depends on in a model: its family and every dimension that sets the
/// cost of a layer (not its weights). Tables are measured on unpruned configs only.
nlohmann::json architecture_fingerprint(const models::ModelConfig& config);

/// The table in `file`, checked against this machine (machine_fingerprint), `config`'s
/// architecture and the shape batch_size × seq_len (measuring one: pruner/jobs/latency_measurement.h).
/// @throws headprune::Error for a malformed file, or one measured on another machine, another
///         architecture or another shape (the message names both and says to delete it or choose
///         another file).
LatencyTable read_latency_table(const std::filesystem::path& file, const models::ModelConfig& config,
                                int64_t batch_size, int64_t seq_len, const torch::Device& device);

/// The file a latency table of `config` at batch_size × seq_len on this machine is cached in by
/// default: $XDG_CACHE_HOME/headprune/latency/ (or ~/.cache/headprune/latency/), named by the
/// architecture, the shape and the machine.
std::filesystem::path default_latency_table_file(const models::ModelConfig& config, int64_t batch_size,
                                                 int64_t seq_len, const torch::Device& device);

}  // namespace headprune::pruner
