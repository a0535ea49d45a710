#include "pruner/measure/latency_table.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/json_get.h"
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/log.h"
#include "pruner/thread_pools.h"

namespace headprune::pruner {
namespace fs = std::filesystem;
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      auto name = line.substr(line.find(':') + 1);
      name.erase(0, name.find_first_not_of(' '));
      return name;
    }
  return "unknown CPU";
}

double layer_ms(const LatencyTable& t, int64_t k, int64_t layers) {
  return (t.ms_by_heads.at(static_cast<std::size_t>(k)) - t.ms_by_heads.front()) / static_cast<double>(layers);
}

/// Appends one group's cost table (its cost with 0 .. n units kept) to `m`, and n unit costs of
/// the group's mean (which only order removal units).
void add_cost_table(gates::SparsityMeasure& m, std::vector<double> table) {
  const auto n = table.size() - 1;
  m.head_cost.insert(m.head_cost.end(), n, n > 0 ? table.back() / static_cast<double>(n) : 0.0);
  m.layer_cost.push_back(std::move(table));
}

/// Sets `m`'s denominator to what its tables can remove: Σ over groups of the cost with every unit kept.
void set_removable_total(gates::SparsityMeasure& m) {
  m.total_cost = 0;
  for (const auto& table : m.layer_cost) m.total_cost += table.back();
  if (m.total_cost <= 0) m.total_cost = 1;
}

/// One layer's FFN of `width` neurons: (ms(width) − ms(0)) / layers, ms linear between the widths timed.
double ffn_layer_ms(const LatencyTable& t, int64_t width, int64_t layers) {
  if (!t.prices_ffn())
    throw Error("this latency table prices heads only, not FFN widths: measure it again with --prune heads,ffn");
  const auto& w = t.ffn_widths;
  if (width < 0 || width > w.back())
    throw Error(fmt::format("an FFN width of {} is outside the latency table's 0 .. {}", width, w.back()));
  const auto above = static_cast<std::size_t>(std::upper_bound(w.begin(), w.end() - 1, width) - w.begin());
  const auto below = above - 1;
  const double lo = t.ms_by_ffn_width[below], hi = t.ms_by_ffn_width[above];
  const double ms = lo + (hi - lo) * static_cast<double>(width - w[below]) / static_cast<double>(w[above] - w[below]);
  return (ms - t.ms_by_ffn_width.front()) / static_cast<double>(layers);
}

}  // namespace

std::vector<double> fitted_latencies(const std::vector<double>& measured, const std::vector<double>& x) {
  if (x.size() != measured.size())
    throw std::logic_error("fitted_latencies: as many positions as timings are needed");
  const auto n = static_cast<double>(measured.size() - 1);  // the points after the first
  if (measured.size() < 3) return measured;
  double sk = 0, sy = 0, skk = 0, sky = 0;
  for (std::size_t k = 1; k < measured.size(); ++k) {
    sk += x[k], sy += measured[k], skk += x[k] * x[k], sky += x[k] * measured[k];
  }
  const double slope = (n * sky - sk * sy) / (n * skk - sk * sk), intercept = (sy - slope * sk) / n;
  if (!(slope > 0))
    throw Error(fmt::format("the measured latencies do not grow with what the layers keep ({:.3g} ms per unit): at "
                            "this shape the machine's noise hides what a head or FFN neuron costs; time a larger "
                            "--latency-shape",
                            slope));
  std::vector<double> fitted{measured[0]};
  for (std::size_t k = 1; k < measured.size(); ++k) fitted.push_back(std::max(fitted.back(), intercept + slope * x[k]));
  return fitted;
}

std::vector<double> fitted_latencies(const std::vector<double>& measured) {
  std::vector<double> heads(measured.size());
  for (std::size_t k = 0; k < heads.size(); ++k) heads[k] = static_cast<double>(k);
  return fitted_latencies(measured, heads);
}

double LatencyTable::predicted_ms(const std::vector<int64_t>& heads_per_layer,
                                  const std::vector<int64_t>& ffn_width_per_layer) const {
  const auto layers = static_cast<int64_t>(heads_per_layer.size());
  double ms = ms_by_heads.front();
  for (auto k : heads_per_layer) ms += layer_ms(*this, k, layers);
  if (ffn_width_per_layer.empty()) return ms;
  if (ffn_width_per_layer.size() != heads_per_layer.size())
    throw Error(fmt::format("a latency prediction for {} layers was given FFN widths for {}", layers,
                            ffn_width_per_layer.size()));
  for (auto w : ffn_width_per_layer) ms += ffn_layer_ms(*this, w, layers);  // throws for a heads-only table
  ms -= static_cast<double>(layers) * ffn_layer_ms(*this, ffn_widths.back(), layers);  // the whole FFNs the heads' table holds
  return ms;
}

double LatencyTable::predicted_ms_of(const models::ModelConfig& config) const {
  std::vector<int64_t> widths;
  if (prices_ffn())
    for (int64_t l = 0; l < config.num_hidden_layers; ++l) widths.push_back(config.ffn_width(l));
  return predicted_ms(config.heads_per_layer(), widths);
}

gates::SparsityMeasure LatencyTable::measure(const models::ModelConfig& config) const {
  if (architecture_fingerprint(config) != model)
    throw Error(fmt::format("the latency table was measured on a different architecture ({}), not this model's ({})",
                            model.dump(), architecture_fingerprint(config).dump()));
  gates::SparsityMeasure m;
  m.unit = gates::SparsityUnit::kLatency;
  for (auto n : config.heads_per_layer()) {
    std::vector<double> layer;
    for (int64_t k = 0; k <= n; ++k) layer.push_back(layer_ms(*this, k, config.num_hidden_layers));
    add_cost_table(m, std::move(layer));
  }
  // The denominator is what heads can remove (the attention's share above every layer at 0
  // heads), as attention-params is for parameter budgets: the Lagrangian's target then lives on
  // the same scale as a share of heads, and trains as fast (with the whole model's latency as
  // denominator a 20% budget cut moved no gate in 300 steps on MiniLM).
  set_removable_total(m);
  return m;
}

gates::SparsityMeasure LatencyTable::with_ffn_costs(gates::SparsityMeasure m, const std::vector<int64_t>& blocks_per_layer,
                                                    int64_t ffn_block) const {
  const auto layers = static_cast<int64_t>(blocks_per_layer.size());
  for (auto blocks : blocks_per_layer) {
    std::vector<double> layer;
    for (int64_t b = 0; b <= blocks; ++b) layer.push_back(ffn_layer_ms(*this, b * ffn_block, layers));
    add_cost_table(m, std::move(layer));
  }
  set_removable_total(m);  // what removing every head and every block saves
  return m;
}

nlohmann::json LatencyTable::to_json() const {
  nlohmann::json j = {{"format", "headprune latency table 1"}, {"machine", machine}, {"model", model},
                      {"batch_size", batch_size}, {"seq_len", seq_len}, {"ms_by_heads", ms_by_heads},
                      {"ms_measured", ms_measured}};
  if (!prices_ffn()) return j;
  j["ffn_widths"] = ffn_widths;
  j["ms_by_ffn_width"] = ms_by_ffn_width;
  j["ms_ffn_measured"] = ms_ffn_measured;
  return j;
}

namespace {

/// Latencies that can price removal: positive, non-decreasing and growing overall.
bool rising(const std::vector<double>& ms) {
  return ms.size() >= 2 && std::is_sorted(ms.begin(), ms.end()) && ms.front() > 0 && ms.back() > ms.front();
}

/// The FFN part of a table (optional: absent in a heads-only table), checked against its model's
/// intermediate_size.
void read_ffn_part(const nlohmann::json& j, LatencyTable& t) {
  if (!j.contains("ffn_widths")) return;
  t.ffn_widths = j.at("ffn_widths").get<std::vector<int64_t>>();
  t.ms_by_ffn_width = j.at("ms_by_ffn_width").get<std::vector<double>>();
  t.ms_ffn_measured = j.value("ms_ffn_measured", std::vector<double>());
  const auto& w = t.ffn_widths;
  if (w.size() < 2 || w.front() != 0 || std::adjacent_find(w.begin(), w.end(), std::greater_equal<>()) != w.end() ||
      w.back() != t.model.value("intermediate_size", int64_t{-1}))
    throw Error("ffn_widths must rise from 0 to the model's intermediate_size");
  if (t.ms_by_ffn_width.size() != w.size() || !rising(t.ms_by_ffn_width))
    throw Error("ms_by_ffn_width must hold positive latencies for each of ffn_widths, non-decreasing and growing "
                "overall");
}

}  // namespace

LatencyTable LatencyTable::from_json(const nlohmann::json& j, const std::string& source) {
  try {
    if (j.at("format") != "headprune latency table 1") throw Error("unknown format");
    LatencyTable t{j.at("machine").get<std::string>(), j.at("model"), models::json_integer(j.at("batch_size"), "batch_size"),
                   models::json_integer(j.at("seq_len"), "seq_len"), j.at("ms_by_heads").get<std::vector<double>>(),
                   j.value("ms_measured", std::vector<double>()), {}, {}, {}};
    if (!rising(t.ms_by_heads))
      throw Error("ms_by_heads must hold positive latencies for 0 .. heads, non-decreasing and growing overall");
    read_ffn_part(j, t);
    return t;
  } catch (const std::exception& e) {
    throw Error(fmt::format("{} is not a headprune latency table: {}", source, e.what()));
  }
}

std::string machine_fingerprint(const torch::Device& device) {
  const auto pools = current_thread_pools();
  return fmt::format("{} | {} logical CPUs | {} | BLAS {} | LibTorch {} | {}", cpu_model(),
                     std::thread::hardware_concurrency(), pools.describe(), pools.describe_blas(), TORCH_VERSION,
                     device.str());
}

nlohmann::json architecture_fingerprint(const models::ModelConfig& c) {
  return {{"model_type", c.model_type},        {"num_hidden_layers", c.num_hidden_layers},
          {"hidden_size", c.hidden_size},      {"num_attention_heads", c.num_attention_heads},
          {"num_key_value_heads", c.num_key_value_heads}, {"head_dim", c.head_dim},
          {"intermediate_size", c.intermediate_size},     {"vocab_size", c.vocab_size}};
}

fs::path default_latency_table_file(const models::ModelConfig& config, int64_t batch_size, int64_t seq_len,
                                    const torch::Device& device) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path root = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".cache";
  const auto key = std::hash<std::string>{}(architecture_fingerprint(config).dump() + machine_fingerprint(device));
  return root / "headprune" / "latency" /
         fmt::format("{}-L{}-H{}-b{}-s{}-{:016x}.json", config.model_type, config.num_hidden_layers,
                     config.num_attention_heads, batch_size, seq_len, key);
}

LatencyTable read_latency_table(const fs::path& file, const models::ModelConfig& config, int64_t batch_size,
                                int64_t seq_len, const torch::Device& device) {
  const auto table = LatencyTable::from_json(models::read_json_file(file), file.string());
  const auto here = machine_fingerprint(device);
  auto refuse = [&](const std::string& what, const std::string& there, const std::string& now) {
    throw Error(fmt::format("latency table {} was measured {} '{}', not '{}': delete it or give another "
                            "--latency-table file to measure again",
                            file.string(), what, there, now));
  };
  if (table.machine != here) refuse("on", table.machine, here);
  if (table.model != architecture_fingerprint(config))
    refuse("for the architecture", table.model.dump(), architecture_fingerprint(config).dump());
  if (table.batch_size != batch_size || table.seq_len != seq_len)
    refuse("at the shape", fmt::format("{}x{}", table.batch_size, table.seq_len),
           fmt::format("{}x{}", batch_size, seq_len));
  log::info("latency table {} (measured on this machine)", file.string());
  return table;
}

}  // namespace headprune::pruner
