#include "pruner/jobs/sweep.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "gates/keep_mask.h"
#include "models/checkpoint.h"
#include "models/errors.h"
#include "pruner/surgery/atomic_write.h"
#include "pruner/training/sparsity_measure.h"
#include "pruner/log.h"
#include "pruner/measure/sts.h"

namespace headprune::pruner {
namespace fs = std::filesystem;
namespace {

/// Quality of one model: STS Spearman if a file is given, else nothing here (fidelity comes
/// from the prune job's summary).
std::optional<double> sts_of(const fs::path& model, const std::optional<std::vector<StsPair>>& pairs,
                             const torch::Device& device) {
  if (!pairs) return std::nullopt;
  auto ckpt = models::load_checkpoint(model, device);
  return evaluate_sts(ckpt, *pairs, 64, device).spearman_x100;
}

}  // namespace

nlohmann::json run_sweep(const SweepOptions& o) {
  if (fs::exists(o.out) && !fs::is_empty(o.out) && !o.job.force)
    throw Error(fmt::format("--out {} exists and is not empty; choose another folder or pass --force",
                            o.out.string()));
  // Validate every target against the model before training anything.
  {
    const auto config = models::ModelConfig::from_directory(o.job.model);
    const auto measure = sparsity_measure(config, o.job.training.unit, o.job.training.flops_seq_len);
    for (double t : o.targets)
      gates::validate_target(t, config.heads_per_layer(), measure,
                             constraints_for(config, o.job.training.constraints));
  }
  fs::create_directories(o.out);
  std::optional<std::vector<StsPair>> pairs;
  if (o.sts) pairs = read_sts(*o.sts);

  nlohmann::json sweep = {{"model", o.job.model.string()}, {"targets", o.targets},
                          {"quality", o.sts ? "sts_spearman" : "fidelity_mean_cosine"},
                          {"points", nlohmann::json::array()}};
  const auto dense_sts = sts_of(o.job.model, pairs, o.job.training.device);
  sweep["dense"] = {{"heads_kept", models::ModelConfig::from_directory(o.job.model).total_heads()},
                    {"speedup", 1.0},
                    {"quality", dense_sts ? nlohmann::json(*dense_sts) : nlohmann::json(1.0)}};
  for (double t : o.targets) {
    auto job = o.job;
    job.training.target_sparsity = t;
    job.out = o.out / fmt::format("target-{:02d}", static_cast<int>(std::lround(t * 100)));
    log::info("\n===== sweep: target sparsity {} -> {} =====", t, job.out.string());
    const auto summary = run_prune_job(job);
    const auto sts = sts_of(job.out, pairs, job.training.device);
    nlohmann::json point = {{"target", t},
                            {"out", job.out.string()},
                            {"heads_kept", summary["heads_kept"]},
                            {"heads_per_layer", summary["heads_per_layer"]},
                            {"fidelity", summary["fidelity"]},
                            {"params_after", summary["apply"]["params_after"]},
                            {"bytes_after", summary["apply"]["bytes_after"]}};
    if (summary["bench"].is_object() && !summary["bench"]["results"].empty()) {
      const auto& cell = summary["bench"]["results"].back();
      point["speedup"] = cell["speedup"];
      point["flops_ratio"] = cell["flops_ratio"];
      point["bench_shape"] = {{"batch_size", cell["batch_size"]}, {"seq_len", cell["seq_len"]}};
    }
    point["quality"] = sts ? nlohmann::json(*sts) : summary["fidelity"]["mean_cosine"];
    sweep["points"].push_back(point);
    write_file_atomic(o.out / "sweep.json", sweep.dump(2) + "\n");  // progress survives a crash
  }
  const auto table = sweep_table(sweep);
  write_file_atomic(o.out / "sweep.txt", table);
  write_file_atomic(o.out / "sweep.svg", sweep_svg(sweep));
  return sweep;
}

std::string sweep_table(const nlohmann::json& sweep) {
  const bool sts = sweep.value("quality", std::string()) == "sts_spearman";
  std::string table = fmt::format("{:>8} {:>6} {:>10} {:>13} {:>13} {:>14}\n", "target", "heads",
                                  sts ? "STS x100" : "cosine", "speedup", "FLOPs ratio", "parameters");
  table += fmt::format("{:>8} {:>6} {:>10.3f} {:>13} {:>13} {:>14}\n", "dense",
                       sweep["dense"]["heads_kept"].get<int64_t>(), sweep["dense"]["quality"].get<double>(),
                       "1.000x", "1.000x", "");
  auto ratio = [](const nlohmann::json& p, const char* key) {
    return p.contains(key) ? fmt::format("{:.3f}x", p[key].get<double>()) : std::string("not measured");
  };
  for (const auto& p : sweep["points"])
    table += fmt::format("{:>8.2f} {:>6} {:>10.3f} {:>13} {:>13} {:>14}\n", p["target"].get<double>(),
                         p["heads_kept"].get<int64_t>(), p["quality"].get<double>(), ratio(p, "speedup"),
                         ratio(p, "flops_ratio"), p["params_after"].get<int64_t>());
  return table;
}

std::string sweep_svg(const nlohmann::json& sweep) {
  const double W = 560, H = 380, left = 70, right = 30, top = 40, bottom = 60;
  std::vector<std::tuple<double, double, std::string>> pts;
  pts.emplace_back(1.0, sweep["dense"]["quality"].get<double>(),
                   fmt::format("dense ({} heads)", sweep["dense"]["heads_kept"].get<int64_t>()));
  for (const auto& p : sweep["points"])
    pts.emplace_back(p.value("speedup", 1.0), p["quality"].get<double>(),
                     fmt::format("{:.0f}% ({} heads)", 100 * p["target"].get<double>(), p["heads_kept"].get<int64_t>()));
  double x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
  for (const auto& [x, y, label] : pts) {
    x0 = std::min(x0, x); x1 = std::max(x1, x); y0 = std::min(y0, y); y1 = std::max(y1, y);
  }
  const double xpad = std::max(0.05, (x1 - x0) * 0.1), ypad = std::max(1e-3, (y1 - y0) * 0.15);
  x0 -= xpad; x1 += xpad; y0 -= ypad; y1 += ypad;
  auto X = [&](double x) { return left + (x - x0) / (x1 - x0) * (W - left - right); };
  auto Y = [&](double y) { return H - bottom - (y - y0) / (y1 - y0) * (H - top - bottom); };
  const bool sts = sweep.value("quality", std::string()) == "sts_spearman";
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">{}: quality vs measured speedup</text>\n"
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n"
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">measured speedup (x)</text>\n"
      "<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{}</text>\n",
      W, H, left, sweep.value("model", std::string("model")), left, H - bottom, W - right, H - bottom, left, top,
      left, H - bottom, (left + W - right) / 2, H - 18, (top + H - bottom) / 2, (top + H - bottom) / 2,
      sts ? "STS-B Spearman x100" : "embedding cosine to dense");
  for (int i = 0; i <= 4; ++i) {
    const double xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.2f}</text>\n", X(xv), H - bottom + 16, xv);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:.3g}</text>\n", left - 6, Y(yv) + 4, yv);
  }
  std::string path;
  for (const auto& [x, y, label] : pts) path += fmt::format("{}{:.1f},{:.1f} ", path.empty() ? "M" : "L", X(x), Y(y));
  s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#2c7fb8\" stroke-width=\"1.5\"/>\n", path);
  for (const auto& [x, y, label] : pts)
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#2c7fb8\"/>\n"
                     "<text x=\"{:.1f}\" y=\"{:.1f}\">{} {:.3g}</text>\n",
                     X(x), Y(y), X(x) + 6, Y(y) - 6, label, y);
  return s + "</svg>\n";
}

}  // namespace headprune::pruner
