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

}  // namespace

std::vector<double> fitted_latencies(const std::vector<double>& measured) {
  const auto n = static_cast<double>(measured.size() - 1);  // points k = 1 .. H
  if (measured.size() < 3) return measured;
  double sk = 0, sy = 0, skk = 0, sky = 0;
  for (std::size_t k = 1; k < measured.size(); ++k) {
    const auto x = static_cast<double>(k);
    sk += x, sy += measured[k], skk += x * x, sky += x * measured[k];
  }
  const double slope = (n * sky - sk * sy) / (n * skk - sk * sk), intercept = (sy - slope * sk) / n;
  if (!(slope > 0))
    throw Error(fmt::format("the measured latencies do not grow with the heads kept ({:.3g} ms per head and layer): "
                            "at this shape the machine's noise hides what a head costs; time a larger "
                            "--latency-shape",
                            slope));
  std::vector<double> fitted{measured[0]};
  for (std::size_t k = 1; k < measured.size(); ++k)
    fitted.push_back(std::max(fitted.back(), intercept + slope * static_cast<double>(k)));
  return fitted;
}

double LatencyTable::predicted_ms(const std::vector<int64_t>& heads_per_layer) const {
  double ms = ms_by_heads.front();
  for (auto k : heads_per_layer) ms += layer_ms(*this, k, static_cast<int64_t>(heads_per_layer.size()));
  return ms;
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
    for (int64_t k = 0; k < n; ++k)
      m.head_cost.push_back(n > 0 ? layer.back() / static_cast<double>(n) : 0.0);
    m.layer_cost.push_back(std::move(layer));
  }
  // The denominator is what heads can remove (the attention's share above every layer at 0
  // heads), as attention-params is for parameter budgets: the Lagrangian's target then lives on
  // the same scale as a share of heads, and trains as fast (with the whole model's latency as
  // denominator a 20% budget cut moved no gate in 300 steps on MiniLM).
  m.total_cost = 0;
  for (const auto& layer : m.layer_cost) m.total_cost += layer.back();
  if (m.total_cost <= 0) m.total_cost = 1;
  return m;
}

nlohmann::json LatencyTable::to_json() const {
  return {{"format", "headprune latency table 1"}, {"machine", machine}, {"model", model},
          {"batch_size", batch_size}, {"seq_len", seq_len}, {"ms_by_heads", ms_by_heads},
          {"ms_measured", ms_measured}};
}

LatencyTable LatencyTable::from_json(const nlohmann::json& j, const std::string& source) {
  try {
    if (j.at("format") != "headprune latency table 1") throw Error("unknown format");
    LatencyTable t{j.at("machine").get<std::string>(), j.at("model"), models::json_integer(j.at("batch_size"), "batch_size"),
                   models::json_integer(j.at("seq_len"), "seq_len"), j.at("ms_by_heads").get<std::vector<double>>(),
                   j.value("ms_measured", std::vector<double>())};
    if (t.ms_by_heads.size() < 2 || !std::is_sorted(t.ms_by_heads.begin(), t.ms_by_heads.end()) ||
        t.ms_by_heads.front() <= 0 || !(t.ms_by_heads.back() > t.ms_by_heads.front()))
      throw Error("ms_by_heads must hold positive latencies for 0 .. heads, non-decreasing and growing overall");
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
