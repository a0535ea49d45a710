#include "pruner/jobs/sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>

#include "gates/keep_mask.h"
#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/analysis/head_importance.h"
#include "pruner/atomic_write.h"
#include "pruner/jobs/importance_baseline.h"
#include "pruner/jobs/layer_baseline.h"
#include "pruner/format.h"
#include "pruner/log.h"
#include "pruner/jobs/quality_measure.h"
#include "pruner/text/training_text.h"
#include "pruner/training/gates_folder.h"
#include "pruner/training/nested_masks.h"
#include "pruner/training/gate_training.h"
#include "pruner/training/sparsity_measure.h"

namespace headprune::pruner {
namespace fs = std::filesystem;
namespace {

/// The prune job of one target: the template with that target (of heads, or with FFN gating
/// of FLOPs: --target-flops 1 − target), written to target-XX/.
PruneJobOptions job_for(const SweepOptions& o, double target) {
  auto job = o.job;
  if (targets_in_flops(o))
    job.training.target_flops = 1 - target;
  else
    job.training.target_sparsity = target;
  job.out = o.out / fmt::format("target-{:02d}", static_cast<int>(std::lround(target * 100)));
  return job;
}

/// The target --one-run trains at: the middle one (of an even count, the upper middle).
/// Measured on MiniLM (docs/results.md): gates trained at 50% read at 25% and 75% scored within
/// 0.1 STS points of, or above, runs trained for those targets; gates trained at 75% read at
/// 50% lost 0.6.
double one_run_target(std::vector<double> targets) {
  std::sort(targets.begin(), targets.end());
  return targets[targets.size() / 2];
}

/// One training at the middle target, then every other target from its gates (nested masks).
/// @returns each target's prune summary.
std::map<double, nlohmann::json> one_run_summaries(const SweepOptions& o, const models::ModelConfig& config) {
  const double trained_at = one_run_target(o.targets);
  const auto first = job_for(o, trained_at);
  log::info("\n===== sweep --one-run: training once, at target sparsity {} =====", trained_at);
  std::map<double, nlohmann::json> summaries{{trained_at, run_prune_job(first)}};
  const auto trained = GateState::load(first.out / "headprune");
  std::ifstream log_file(first.out / "headprune" / "train_log.jsonl", std::ios::binary);
  const std::string train_log(std::istreambuf_iterator<char>(log_file), {});
  for (double t : o.targets)
    if (!summaries.count(t)) {
      log::info("\n===== sweep --one-run: target sparsity {} from the gates trained at {} =====", t, trained_at);
      summaries[t] = prune_with_gates(job_for(o, t), gates_at_target(trained, t, config, first.training), train_log);
    }
  return summaries;
}

nlohmann::json sweep_point(double t, const PruneJobOptions& job, const nlohmann::json& summary,
                           const std::optional<double>& quality);

/// The first kImportanceSequences training sequences of the sweep's text: what both baselines score on.
std::vector<std::vector<int64_t>> scoring_sequences(const SweepOptions& o, const models::Checkpoint& ckpt) {
  const auto corpus = load_training_text(o.job.text, ckpt, o.job.corpus);
  const auto n = std::min(kImportanceSequences, corpus.train.size());
  return {corpus.train.begin(), corpus.train.begin() + static_cast<std::ptrdiff_t>(n)};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A baseline's folder for target t: <prefix>-XX/.
PruneJobOptions baseline_job(const SweepOptions& o, double t, const char* prefix) {
  auto job = job_for(o, t);
  job.out = o.out / fmt::format("{}-{:02d}", prefix, static_cast<int>(std::lround(t * 100)));
  job.training.model_path = job.model.string();
  return job;
}

/// sweep.json's "baselines.importance": per head the ablation importance on the first training
/// sequences, then one model per target with the least important heads removed (no training).
nlohmann::json importance_baseline(const SweepOptions& o, const QualityMeasure& quality) {
  const auto& device = o.job.training.device;
  auto ckpt = models::load_checkpoint(o.job.model, device);
  const auto sequences = scoring_sequences(o, ckpt);
  log::info("\n===== sweep baseline: head importance by ablation on {} training sequences =====", sequences.size());
  const auto t0 = std::chrono::steady_clock::now();
  const auto importance = ablation_importance(ckpt, sequences, o.job.training.batch_size, device);
  const double seconds = seconds_since(t0);
  nlohmann::json points = nlohmann::json::array();
  for (double t : o.targets) {
    const auto job = baseline_job(o, t, "importance");
    log::info("\n===== sweep baseline: target sparsity {} by importance -> {} =====", t, job.out.string());
    const auto summary = prune_with_gates(job, importance_gates(ckpt, importance, t, job.training), "");
    points.push_back(sweep_point(t, job, summary, quality.of(job.out, device)));
  }
  return {{"method", "ablation importance (Michel et al. 2019), least important heads removed, no training"},
          {"sequences", sequences.size()},
          {"importance_seconds", seconds},
          {"points", points}};
}

/// sweep.json's "baselines.layers": the greedy layer order on the first training sequences, then
/// one model per distinct layer count (layers_for_target) with those layers removed.
nlohmann::json layer_baseline(const SweepOptions& o, const models::ModelConfig& config,
                              const QualityMeasure& quality) {
  const auto& device = o.job.training.device;
  const auto layers = config.num_hidden_layers;
  std::vector<int64_t> counts;
  for (double t : o.targets) counts.push_back(layers_for_target(t, layers));
  const auto dense = models::load_checkpoint(o.job.model, device);
  const auto sequences = scoring_sequences(o, dense);
  log::info("\n===== sweep baseline: greedy layer removal on {} training sequences =====", sequences.size());
  const auto t0 = std::chrono::steady_clock::now();
  const auto order = greedy_layer_order(dense, sequences, o.job.training.batch_size, device,
                                        *std::max_element(counts.begin(), counts.end()));
  nlohmann::json record = {{"method", "whole layers removed, greedily by the distillation loss, no training"},
                           {"sequences", sequences.size()},
                           {"search_seconds", seconds_since(t0)},
                           {"order", nlohmann::json::array()},
                           {"points", nlohmann::json::array()}};
  for (const auto& step : order) record["order"].push_back({{"layer", step.layer}, {"loss", step.loss}});
  std::set<int64_t> done;
  for (std::size_t i = 0; i < o.targets.size(); ++i) {
    if (!done.insert(counts[i]).second) continue;  // another target already removed as many layers
    const auto job = baseline_job(o, o.targets[i], "layers");
    std::vector<int64_t> drop;
    for (int64_t k = 0; k < counts[i]; ++k) drop.push_back(order[static_cast<std::size_t>(k)].layer);
    log::info("\n===== sweep baseline: target sparsity {} as {} of {} layers removed -> {} =====", o.targets[i],
              counts[i], layers, job.out.string());
    const auto summary = prune_layers(job, drop);  // before the quality measure reads the folder it writes
    auto point = sweep_point(o.targets[i], job, summary, quality.of(job.out, device));
    point["layers_removed"] = drop;
    record["points"].push_back(point);
  }
  return record;
}

/// Whether heads alone can meet `job`'s FLOPs budget on `model`: empty, or why not (with_budget's refusal).
std::string unreachable_reason(const PruneJobOptions& job, const models::AttentionModel& model) {
  try {
    with_budget(job.training, model);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

/// sweep.json's "baselines.heads" (kinds heads) or "baselines.ffn" (heads,ffn): the sweep's
/// recipe with fewer gate kinds, trained to each target's FLOPs budget (heads-XX/, ffn-XX/); a
/// budget they cannot meet is a point with "unreachable". Beside sublayer gates, which set the
/// sweep's kept minimum to 0, they run with prune's default minimum.
nlohmann::json kinds_baseline(const SweepOptions& o, const models::AttentionModel& dense,
                              const QualityMeasure& quality, gates::GateKinds kinds) {
  const bool heads = kinds == gates::GateKinds::kHeads;
  const auto* what = heads ? "heads only" : "heads and FFN blocks without sublayer gates";
  nlohmann::json points = nlohmann::json::array();
  for (double t : o.targets) {
    auto job = baseline_job(o, t, heads ? "heads" : "ffn");
    job.training.kinds = kinds;
    if (o.job.training.gates_sublayers())
      job.training.constraints.min_heads_per_layer = GateTrainingOptions{}.constraints.min_heads_per_layer;
    if (const auto why = unreachable_reason(job, dense); !why.empty()) {
      log::warn("sweep baseline: {} cannot remove {:.0f}% of the FLOPs: {}", what, 100 * t, why);
      points.push_back({{"target", t}, {"unreachable", why}});
      continue;
    }
    log::info("\n===== sweep baseline: {}, target {} of the FLOPs -> {} =====", what, t, job.out.string());
    const auto summary = run_prune_job(job);
    points.push_back(sweep_point(t, job, summary, quality.of(job.out, job.training.device)));
  }
  return {{"method", fmt::format("{}, gates trained to the same FLOPs budget", what)}, {"points", points}};
}

/// Refuses, before anything is trained, a target the sweep's runs cannot reach: of heads by
/// validate_target, of FLOPs by with_budget on the model itself.
void check_targets(const SweepOptions& o, const models::ModelConfig& config) {
  if (!targets_in_flops(o)) {
    const auto measure = sparsity_measure(config, o.job.training);
    for (double t : o.targets)
      gates::validate_target(t, config.heads_per_layer(), measure, constraints_for(config, o.job.training.constraints));
    return;
  }
  const auto dense = models::load_checkpoint(o.job.model, o.job.training.device);
  for (double t : o.targets) with_budget(job_for(o, t).training, *dense.model);
}

/// sweep.json's entry for one target.
nlohmann::json sweep_point(double t, const PruneJobOptions& job, const nlohmann::json& summary,
                           const std::optional<double>& quality) {
  nlohmann::json point = {{"target", t},
                          {"out", job.out.string()},
                          {"heads_kept", summary["heads_kept"]},
                          {"heads_per_layer", summary["heads_per_layer"]},
                          {"fidelity", summary["fidelity"]},
                          {"params_after", summary["apply"]["params_after"]},
                          {"bytes_after", summary["apply"]["bytes_after"]},
                          {"seconds", summary["seconds"]}};
  if (summary["apply"].contains("ffn_widths_after")) point["ffn_widths"] = summary["apply"]["ffn_widths_after"];
  if (summary["bench"].is_object() && !summary["bench"]["results"].empty()) {
    const auto& cell = summary["bench"]["results"].back();
    point["speedup"] = cell["speedup"];
    point["flops_ratio"] = cell["flops_ratio"];
    point["bench_shape"] = {{"batch_size", cell["batch_size"]}, {"seq_len", cell["seq_len"]}};
  }
  point["quality"] = quality ? nlohmann::json(*quality) : summary["fidelity"]["mean_cosine"];
  return point;
}

/// Refuses a non-empty --out without --force, and with it anything there an earlier sweep did
/// not write: sweep.{json,txt,svg}, the pruned folders (each headprune's by its own record) and
/// their gate-training work folders (.NAME.gates). @throws headprune::Error naming the entry.
void check_sweep_target(const fs::path& out, bool force) {
  if (!fs::exists(out) || fs::is_empty(out)) return;
  if (!force)
    throw Error(fmt::format("--out {} exists and is not empty; choose another folder or pass --force", out.string()));
  for (const auto& entry : fs::directory_iterator(out)) {
    const auto name = entry.path().filename().string();
    const auto type = entry.symlink_status().type();
    const bool work = name.size() > 7 && name.front() == '.' && name.substr(name.size() - 6) == ".gates";
    if (type == fs::file_type::regular && (name == "sweep.json" || name == "sweep.txt" || name == "sweep.svg"))
      continue;
    if (type == fs::file_type::directory && work)
      check_gates_folder_replaceable(entry.path());
    else if (type == fs::file_type::directory)
      check_replaceable_folder(entry.path());
    else
      throw Error(fmt::format("--force replaces only what headprune wrote: --out {} holds '{}', which no "
                              "earlier sweep wrote; move it out or choose another folder (nothing was written)",
                              out.string(), name));
  }
}

}  // namespace

bool targets_in_flops(const SweepOptions& o) { return o.job.training.gates_ffn(); }

nlohmann::json run_sweep(const SweepOptions& o) {
  check_sweep_target(o.out, o.job.force);
  // Validate every target against the model before training anything.
  const auto config = models::read_config_file(o.job.model);
  check_targets(o, config);
  const auto& quality = o.quality;
  // The dense model's quality first: a model the tasks cannot score is refused before anything is written.
  const auto dense_quality = quality.of(o.job.model, o.job.training.device);
  fs::create_directories(o.out);

  nlohmann::json sweep = {{"model", o.job.model.string()}, {"targets", o.targets},
                          {"target_unit", targets_in_flops(o) ? "flops" : "heads"},
                          {"quality", quality.name()},
                          {"points", nlohmann::json::array()}};
  for (const auto& [task, questions] : quality.task_sizes())
    sweep["tasks"].push_back({{"task", task}, {"questions", questions}});
  std::vector<int64_t> dense_widths;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) dense_widths.push_back(config.ffn_width(l));
  sweep["dense"] = {{"heads_kept", config.total_heads()},
                    {"ffn_neurons", sum(dense_widths)},
                    {"speedup", 1.0},
                    {"quality", dense_quality ? nlohmann::json(*dense_quality) : nlohmann::json(1.0)}};
  const auto t0 = std::chrono::steady_clock::now();
  const auto summaries = o.one_run ? one_run_summaries(o, config) : std::map<double, nlohmann::json>();
  for (double t : o.targets) {
    const auto job = job_for(o, t);
    log::info("\n===== sweep: target sparsity {} -> {} =====", t, job.out.string());
    const auto summary = o.one_run ? summaries.at(t) : run_prune_job(job);
    sweep["points"].push_back(sweep_point(t, job, summary, quality.of(job.out, job.training.device)));
    write_file_atomic(o.out / "sweep.json", sweep.dump(2) + "\n");  // progress survives a crash
  }
  sweep["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.one_run) sweep["one_run"] = {{"trained_at", one_run_target(o.targets)}};
  if (o.importance_baseline) sweep["baselines"]["importance"] = importance_baseline(o, quality);
  if (o.layer_baseline) sweep["baselines"]["layers"] = layer_baseline(o, config, quality);
  if (o.heads_baseline || o.ffn_baseline) {
    const auto dense = models::load_checkpoint(o.job.model, o.job.training.device);
    if (o.ffn_baseline)
      sweep["baselines"]["ffn"] = kinds_baseline(o, *dense.model, quality, gates::GateKinds::kHeadsAndFfn);
    if (o.heads_baseline) sweep["baselines"]["heads"] = kinds_baseline(o, *dense.model, quality, gates::GateKinds::kHeads);
  }
  write_file_atomic(o.out / "sweep.json", sweep.dump(2) + "\n");
  const auto table = sweep_table(sweep);
  write_file_atomic(o.out / "sweep.txt", table);
  write_file_atomic(o.out / "sweep.svg", sweep_svg(sweep));
  return sweep;
}

namespace {

/// A baseline's record in a sweep.json ("importance", "layers"), or null.
nlohmann::json baseline_of(const nlohmann::json& sweep, const std::string& name) {
  return sweep.contains("baselines") ? sweep["baselines"].value(name, nlohmann::json()) : nlohmann::json();
}

/// How the table and the plot present each baseline.
struct BaselineStyle {
  const char* name;     ///< key under sweep.json's "baselines"
  const char* heading;  ///< the table's line above its rows
  const char* tag;      ///< plot tags: tag + 1, 2, ...
  const char* label;    ///< legend text before the target
  const char* colour;
};
constexpr BaselineStyle kBaselines[] = {
    {"importance", "baseline: heads removed by ablation importance, no training", "I", "importance", "#d95f0e"},
    {"layers", "baseline: whole layers removed (greedy by distillation loss), no training", "L", "layers",
     "#31a354"},
    {"heads", "baseline: heads only, gates trained to the same FLOPs budget", "H", "heads only", "#756bb1"},
    {"ffn", "baseline: heads and FFN blocks without sublayer gates, trained to the same FLOPs budget", "F",
     "heads+FFN", "#e7298a"},
};

}  // namespace

std::string sweep_table(const nlohmann::json& sweep) {
  const bool flops = sweep.value("target_unit", std::string("heads")) == "flops";
  // With FFN gates the FFN neurons kept are a column too.
  const auto line = [flops](const std::string& target, const std::string& heads, const std::string& quality,
                            const std::string& speedup, const std::string& ratio, const std::string& params,
                            const std::string& ffn) {
    return fmt::format("{:>8} {:>6} {:>10} {:>13} {:>13} {:>14}{}\n", target, heads, quality, speedup, ratio, params,
                       flops ? fmt::format(" {:>9}", ffn) : "");
  };
  std::string table = flops ? "target = the share of the dense model's FLOPs per token removed\n" : "";
  table += line("target", "heads", QualityMeasure::column(sweep.value("quality", std::string())), "speedup",
                "FLOPs ratio", "parameters", "FFN kept");
  table += line("dense", std::to_string(sweep["dense"]["heads_kept"].get<int64_t>()),
                fmt::format("{:.3f}", sweep["dense"]["quality"].get<double>()), "1.000x", "1.000x", "",
                std::to_string(sweep["dense"].value("ffn_neurons", int64_t{0})));
  auto ratio = [](const nlohmann::json& p, const char* key) {
    return p.contains(key) ? fmt::format("{:.3f}x", p[key].get<double>()) : std::string("not measured");
  };
  auto rows = [&](const nlohmann::json& points) {
    for (const auto& p : points) {
      const auto target = fmt::format("{:.2f}", p["target"].get<double>());
      if (p.contains("unreachable")) {
        table += fmt::format("{:>8} unreachable: {}\n", target, p["unreachable"].get<std::string>());
        continue;
      }
      const auto widths = p.value("ffn_widths", std::vector<int64_t>());
      table += line(target, std::to_string(p["heads_kept"].get<int64_t>()),
                    fmt::format("{:.3f}", p["quality"].get<double>()), ratio(p, "speedup"), ratio(p, "flops_ratio"),
                    std::to_string(p["params_after"].get<int64_t>()), std::to_string(sum(widths)));
    }
  };
  rows(sweep["points"]);
  for (const auto& style : kBaselines)
    if (const auto baseline = baseline_of(sweep, style.name); !baseline.is_null()) {
      table += std::string(style.heading) + "\n";
      rows(baseline["points"]);
    }
  return table;
}

namespace {

constexpr double kW = 760, kH = 420, kLeft = 70, kRight = 440, kTop = 64, kBottom = 360;

/// One plotted model: x, quality, its tag on the plot and its legend line.
struct SweepPoint {
  double x, y;
  std::string tag, legend;
};

/// Axis ticks at 1, 2 or 5 times a power of ten, about four over [lo, hi].
std::vector<double> nice_ticks(double lo, double hi) {
  const double raw = (hi - lo) / 4, power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) {
      step = m * power;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

/// The points of a sweep: speedup (or share of heads removed, when not measured) vs quality.
std::vector<SweepPoint> sweep_points(const nlohmann::json& sweep, bool measured) {
  const auto dense_heads = sweep["dense"]["heads_kept"].get<int64_t>();
  std::vector<SweepPoint> pts;
  pts.push_back({measured ? 1.0 : 0.0, sweep["dense"]["quality"].get<double>(), "D",
                 fmt::format("D  dense: {} heads, quality {:.4g}", dense_heads,
                             sweep["dense"]["quality"].get<double>())});
  for (const auto& p : sweep["points"]) {
    const auto kept = p["heads_kept"].get<int64_t>();
    const double removed = 100.0 * static_cast<double>(dense_heads - kept) / static_cast<double>(dense_heads);
    const auto tag = std::to_string(pts.size());
    pts.push_back({measured ? p["speedup"].get<double>() : removed, p["quality"].get<double>(), tag,
                   fmt::format("{}  target {:.2f}: {} heads, {:.4g}{}", tag, p["target"].get<double>(), kept,
                               p["quality"].get<double>(),
                               measured ? fmt::format(", {:.3f}x", p["speedup"].get<double>()) : "")});
  }
  return pts;
}

/// A baseline's points (tags I1, I2, ... / L1, L2, ...), or none.
std::vector<SweepPoint> baseline_points(const nlohmann::json& sweep, const BaselineStyle& style, bool measured) {
  std::vector<SweepPoint> pts;
  const auto baseline = baseline_of(sweep, style.name);
  if (baseline.is_null()) return pts;
  const auto dense_heads = sweep["dense"]["heads_kept"].get<double>();
  for (const auto& p : baseline["points"]) {
    if (p.contains("unreachable")) continue;  // no model: the table says why
    const auto kept = p["heads_kept"].get<int64_t>();
    const auto tag = style.tag + std::to_string(pts.size() + 1);
    const auto what = p.contains("layers_removed")
                          ? fmt::format("{} layers", p["layers_removed"].size())
                          : fmt::format("{:.2f}", p["target"].get<double>());
    pts.push_back({measured ? p["speedup"].get<double>() : 100.0 * (dense_heads - static_cast<double>(kept)) / dense_heads,
                   p["quality"].get<double>(), tag,
                   fmt::format("{}  {} {}: {} heads, {:.4g}{}", tag, style.label, what, kept, p["quality"].get<double>(),
                               measured ? fmt::format(", {:.3f}x", p["speedup"].get<double>()) : "")});
  }
  return pts;
}

/// Both axes with their ticks and titles, for data ranges [x0,x1] x [y0,y1].
std::string sweep_axes(double x0, double x1, double y0, double y1, const std::string& x_title,
                       const std::string& y_title) {
  auto X = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * (kRight - kLeft); };
  auto Y = [&](double y) { return kBottom - (y - y0) / (y1 - y0) * (kBottom - kTop); };
  std::string s = fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"black\"/>\n"
      "<text x=\"{4}\" y=\"{5}\" text-anchor=\"middle\">{6}</text>\n"
      "<text x=\"18\" y=\"{7}\" transform=\"rotate(-90 18 {7})\" text-anchor=\"middle\">{8}</text>\n",
      kLeft, kBottom, kRight, kTop, (kLeft + kRight) / 2, kBottom + 38, x_title, (kTop + kBottom) / 2, y_title);
  for (double t : nice_ticks(x0, x1))
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                     X(t), kBottom, kBottom + 4, kBottom + 17, t);
  for (double t : nice_ticks(y0, y1))
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"black\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                     kLeft - 4, Y(t), kLeft, kLeft - 7, Y(t) + 4, t);
  return s;
}

}  // namespace

std::string sweep_svg(const nlohmann::json& sweep) {
  const auto& first = sweep["points"].empty() ? nlohmann::json::object() : sweep["points"].front();
  const bool measured = first.contains("speedup");
  const auto pts = sweep_points(sweep, measured);
  std::vector<std::vector<SweepPoint>> baselines;
  for (const auto& style : kBaselines) baselines.push_back(baseline_points(sweep, style, measured));
  double x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
  auto all = baselines;
  all.push_back(pts);
  for (const auto& series : all)
    for (const auto& p : series)
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  const double xpad = std::max(measured ? 0.05 : 5.0, (x1 - x0) * 0.1), ypad = std::max(1e-3, (y1 - y0) * 0.15);
  x0 -= xpad, x1 += xpad, y0 -= ypad, y1 += ypad;
  auto X = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * (kRight - kLeft); };
  auto Y = [&](double y) { return kBottom - (y - y0) / (y1 - y0) * (kBottom - kTop); };
  const auto model = fs::path(sweep.value("model", std::string("model"))).filename().string().substr(0, 40);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"12\" y=\"22\" font-size=\"15\">{}: quality vs {}</text>\n"
      "<text x=\"12\" y=\"40\" fill=\"#555\">{}</text>\n",
      kW, kH, model, measured ? "measured speedup" : "heads removed",
      measured ? "each point: one pruned model; speedup measured side by side with the dense model"
               : "speedup not measured (--no-bench)");
  s += sweep_axes(x0, x1, y0, y1, measured ? "measured speedup (x)" : "heads removed (%)",
                  QualityMeasure::axis_label(sweep.value("quality", std::string())));
  double legend_y = kTop + 6;
  // One series: a line through its points (the baseline's starts at the dense model), markers, legend lines.
  auto series = [&](std::vector<SweepPoint> points, const char* colour, bool from_dense) {
    if (from_dense) points.insert(points.begin(), pts.front());
    std::string path;
    for (const auto& p : points) path += fmt::format("{}{:.1f},{:.1f} ", path.empty() ? "M" : "L", X(p.x), Y(p.y));
    s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{}/>\n", path, colour,
                     from_dense ? " stroke-dasharray=\"5,3\"" : "");
    for (std::size_t i = from_dense ? 1 : 0; i < points.size(); ++i) {
      const auto& p = points[i];
      s += fmt::format("<circle cx=\"{0:.1f}\" cy=\"{1:.1f}\" r=\"4\" fill=\"{5}\"/>"
                       "<text x=\"{2:.1f}\" y=\"{3:.1f}\" font-weight=\"bold\">{4}</text>\n",
                       X(p.x), Y(p.y), X(p.x) + 6, Y(p.y) - 6, p.tag, colour);
      s += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", kRight + 30, legend_y, p.legend);
      legend_y += 18;
    }
  };
  series(pts, "#2c7fb8", false);
  for (std::size_t i = 0; i < baselines.size(); ++i)
    if (!baselines[i].empty()) series(baselines[i], kBaselines[i].colour, true);
  return s + "</svg>\n";
}

}  // namespace headprune::pruner
