#include "pruner/report/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/kv_cache.h"
#include "models/registry.h"
#include "pruner/format.h"
#include "pruner/report/report_roles.h"

namespace headprune::pruner {

std::vector<int64_t> LayerReport::kept_indices() const {
  std::vector<int64_t> out;
  for (size_t h = 0; h < kept.size(); ++h)
    if (kept[h]) out.push_back(static_cast<int64_t>(h));
  return out;
}

int64_t HeadReport::heads_total() const {
  return num_attention_heads * static_cast<int64_t>(layers.size());
}

int64_t HeadReport::heads_kept() const {
  int64_t n = 0;
  for (const auto& l : layers) n += static_cast<int64_t>(l.kept_indices().size());
  return n;
}

HeadReport report_from_gates(const GateState& state, const std::string& source) {
  HeadReport r;
  r.source = source;
  r.num_attention_heads = state.model.num_attention_heads;
  const auto n = static_cast<size_t>(r.num_attention_heads);
  for (const auto& layer : state.layers) {
    LayerReport lr{std::vector<bool>(n, false), std::vector<bool>(n, false),
                   std::vector<std::optional<double>>(n), {}};
    for (size_t i = 0; i < layer.heads.size(); ++i) {
      const auto h = static_cast<size_t>(layer.heads[i]);
      lr.present[h] = true;
      lr.kept[h] = layer.keep[i];
      lr.gate[h] = layer.gate[i];
    }
    r.layers.push_back(std::move(lr));
  }
  for (const auto& layer : state.ffn) {
    r.ffn_widths_original.push_back(layer.width);
    r.ffn_widths.push_back(layer.kept_width());
  }
  r.warning = state.summary.value("convergence_warning", std::string());
  return r;
}

namespace {

/// Checks a head index read from a checkpoint's record before it indexes a table.
size_t head_slot(int64_t h, size_t n, const std::filesystem::path& dir, int64_t layer) {
  if (h < 0 || static_cast<size_t>(h) >= n)
    throw Error(fmt::format("{}/config.json: the headprune record of layer {} names head {}, but "
                            "the model had {} heads per layer",
                            dir.string(), layer, h, n));
  return static_cast<size_t>(h);
}

/// A decoder's KV-cache numbers per token, in the model first pruned and now.
void set_kv_cache(HeadReport& r, const models::ModelConfig& config) {
  if (!config.family().has_lm_head()) return;
  const int64_t original_kv_heads = config.original_num_attention_heads / config.kv_group_size();
  r.kv_values_per_token_original = 2 * original_kv_heads * config.head_dim * config.num_hidden_layers;
  r.kv_values_per_token = models::kv_values_per_token(config);
}

/// The FFN widths per layer, when any layer has fewer neurons than intermediate_size.
void set_ffn_widths(HeadReport& r, const models::ModelConfig& config) {
  if (config.plain_ffn() && config.ffn_width(0) == config.intermediate_size) return;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    r.ffn_widths_original.push_back(config.intermediate_size);
    r.ffn_widths.push_back(config.ffn_width(l));
  }
}

}  // namespace

HeadReport report_from_checkpoint(const std::filesystem::path& dir) {
  const auto config = models::read_config_file(dir);
  HeadReport r;
  r.source = dir.string();
  // Head numbers and count of the model first pruned (a uniform LLaMA export renumbers).
  r.num_attention_heads = config.original_num_attention_heads;
  const auto n = static_cast<size_t>(r.num_attention_heads);
  const auto note = config.raw.value("headprune", nlohmann::json::object());
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    LayerReport lr{std::vector<bool>(n, false), std::vector<bool>(n, false),
                   std::vector<std::optional<double>>(n), {}};
    const auto kept_now = config.original_ids(l, config.kept_heads[l]);
    // Heads present before the last headprune pruning: its record, else the kept ones.
    std::vector<int64_t> before = kept_now;
    if (note.is_object() && note.contains("layers") && note["layers"].size() > static_cast<size_t>(l)) {
      const auto& rec = note["layers"][l];
      if (rec.contains("heads_before")) before = models::json_integer_list(rec.at("heads_before"), "headprune record heads_before");
      const auto kept = rec.contains("kept") ? models::json_integer_list(rec.at("kept"), "headprune record kept")
                                             : std::vector<int64_t>();
      const auto gates = rec.value("gate", std::vector<double>());
      for (size_t i = 0; i < kept.size() && i < gates.size(); ++i)
        lr.gate[head_slot(kept[i], n, dir, l)] = gates[i];
    }
    for (auto h : before) lr.present[head_slot(h, n, dir, l)] = true;
    for (auto h : kept_now) {
      lr.present[head_slot(h, n, dir, l)] = true;
      lr.kept[head_slot(h, n, dir, l)] = true;
    }
    r.layers.push_back(std::move(lr));
  }
  set_kv_cache(r, config);
  set_ffn_widths(r, config);
  // An export by `prune` keeps its gates in headprune/gates.json.
  if (std::filesystem::exists(dir / "headprune" / "gates.json"))
    r.warning = GateState::load(dir / "headprune").summary.value("convergence_warning", std::string());
  if (std::filesystem::exists(dir / "headprune" / "head_roles.json"))
    read_report_roles(r, dir / "headprune" / "head_roles.json");
  return r;
}

HeadReport load_report(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "gates.json"))
    return report_from_gates(GateState::load(dir), dir.string());
  if (std::filesystem::exists(dir / "config.json")) return report_from_checkpoint(dir);
  throw Error(fmt::format("{} holds neither gates.json (a gates folder) nor config.json (a "
                          "checkpoint)",
                          dir.string()));
}

nlohmann::json to_json(const HeadReport& r) {
  nlohmann::json layers = nlohmann::json::array();
  std::vector<int64_t> per_layer;
  for (size_t l = 0; l < r.layers.size(); ++l) {
    const auto& lr = r.layers[l];
    std::vector<int64_t> removed;
    nlohmann::json gate = nlohmann::json::array();
    for (size_t h = 0; h < lr.kept.size(); ++h) {
      if (lr.present[h] && !lr.kept[h]) removed.push_back(static_cast<int64_t>(h));
      gate.push_back(lr.gate[h] ? nlohmann::json(*lr.gate[h]) : nlohmann::json());
    }
    const auto kept = lr.kept_indices();
    per_layer.push_back(static_cast<int64_t>(kept.size()));
    layers.push_back({{"layer", l}, {"kept", kept}, {"removed", removed}, {"gate", gate}});
    if (!lr.roles.empty()) layers.back()["roles"] = lr.roles;
  }
  nlohmann::json j = {{"source", r.source},
                      {"num_attention_heads", r.num_attention_heads},
                      {"heads_total", r.heads_total()},
                      {"heads_kept", r.heads_kept()},
                      {"heads_per_layer", per_layer},
                      {"layers", layers}};
  if (!r.warning.empty()) j["warning"] = r.warning;
  if (r.kv_values_per_token > 0)
    j["kv_cache_values_per_token"] = {{"original", r.kv_values_per_token_original}, {"kept", r.kv_values_per_token}};
  if (!r.ffn_widths.empty()) j["ffn_widths"] = {{"original", r.ffn_widths_original}, {"kept", r.ffn_widths}};
  return j;
}

std::string to_text(const HeadReport& r) {
  std::string out = fmt::format("{}: {} of {} heads kept ({:.1f}% removed)\n", r.source,
                                r.heads_kept(), r.heads_total(),
                                100.0 * (1.0 - static_cast<double>(r.heads_kept()) /
                                                   static_cast<double>(std::max<int64_t>(1, r.heads_total()))));
  out += "legend: gate value per head (kept), '  .  ' removed, blank = removed earlier\n";
  out += "layer kept |";
  for (int64_t h = 0; h < r.num_attention_heads; ++h) out += fmt::format(" h{:<3}", h);
  out += "| kept heads\n";
  for (size_t l = 0; l < r.layers.size(); ++l) {
    const auto& lr = r.layers[l];
    const auto kept = lr.kept_indices();
    out += fmt::format("{:>5} {:>2}/{:<2}|", l, kept.size(), r.num_attention_heads);
    for (size_t h = 0; h < lr.kept.size(); ++h) {
      if (!lr.present[h]) out += "     ";
      else if (!lr.kept[h]) out += "  .  ";
      else if (lr.gate[h]) out += fmt::format(" {:.2f}", *lr.gate[h]);
      else out += "  #  ";
    }
    out += fmt::format("| {}\n", kept.empty() ? std::string("(none: attention adds only its output bias)")
                                                 : fmt::format("{}", fmt::join(kept, ",")));
  }
  if (r.kv_values_per_token > 0)
    out += fmt::format("KV cache per token: {:.2f} -> {:.2f} KiB at F16 ({} -> {} numbers, {:.2f}x smaller)\n",
                       r.kv_values_per_token_original * 2 / 1024.0, r.kv_values_per_token * 2 / 1024.0,
                       r.kv_values_per_token_original, r.kv_values_per_token,
                       static_cast<double>(r.kv_values_per_token_original) / static_cast<double>(r.kv_values_per_token));
  if (!r.ffn_widths.empty()) {
    const auto& before = r.ffn_widths_original;
    const bool one_width = std::all_of(before.begin(), before.end(), [&](int64_t w) { return w == before[0]; });
    out += fmt::format("FFN neurons per layer ({}): {} ({} of {} kept)\n",
                       one_width ? fmt::format("of {}", before[0]) : fmt::format("of {}", fmt::join(before, " ")),
                       fmt::join(r.ffn_widths, " "), sum(r.ffn_widths), sum(before));
  }
  if (!r.warning.empty()) out += fmt::format("WARNING: {}\n", r.warning);
  return out + roles_text(r);
}

namespace {

constexpr int kCell = 28, kLeft = 70, kTop = 96, kBarGap = 28, kBarWidth = 160;
constexpr const char* kRemovedFill = "#f4f4f4";
constexpr const char* kEarlierFill = "#bdbdbd";

/// A kept head's colour: blue, darker for a higher gate value.
std::string kept_fill(double gate) {
  const int shade = static_cast<int>(std::lround(200 - 150 * std::clamp(gate, 0.0, 1.0)));
  return fmt::format("rgb({},{},{})", shade / 4, shade / 2 + 20, std::min(255, shade + 55));
}

/// Title, subtitle and the legend of the three cell kinds.
std::string svg_header(const HeadReport& r, int width, int height) {
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"12\" y=\"22\" font-size=\"15\">Surviving heads: {} of {} kept</text>\n",
      width, height, r.heads_kept(), r.heads_total());
  const int y = 42;
  s += fmt::format("<rect x=\"12\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/>"
                   "<text x=\"31\" y=\"{}\">kept (darker = higher gate)</text>\n",
                   y, kept_fill(1.0), y + 11);
  s += fmt::format("<rect x=\"225\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\" stroke=\"#999\"/>"
                   "<path d=\"M228 {} L236 {} M236 {} L228 {}\" stroke=\"#c0392b\" stroke-width=\"2\"/>"
                   "<text x=\"244\" y=\"{}\">removed</text>\n",
                   y, kRemovedFill, y + 3, y + 11, y + 3, y + 11, y + 11);
  s += fmt::format("<rect x=\"305\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/>"
                   "<text x=\"324\" y=\"{}\">removed before this run</text>\n",
                   y, kEarlierFill, y + 11);
  return s;
}

/// One head's cell (with a hover title).
std::string svg_cell(const LayerReport& lr, std::size_t h, int l, int x, int y) {
  const bool removed = lr.present[h] && !lr.kept[h];
  const std::string fill = !lr.present[h] ? kEarlierFill : removed ? kRemovedFill
                                                                    : kept_fill(lr.gate[h].value_or(1.0));
  const std::string what = !lr.present[h] ? "removed earlier"
                           : removed      ? "removed"
                           : lr.gate[h]   ? fmt::format("kept, gate {:.3f}", *lr.gate[h])
                                          : std::string("kept");
  std::string s = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                              "stroke=\"white\"><title>layer {} head {}: {}</title></rect>\n",
                              x, y, kCell, kCell, fill, l, h, what);
  if (removed)
    s += fmt::format("<path d=\"M{} {} L{} {} M{} {} L{} {}\" stroke=\"#c0392b\" stroke-width=\"2\"/>\n",
                     x + 8, y + 8, x + kCell - 8, y + kCell - 8, x + kCell - 8, y + 8, x + 8, y + kCell - 8);
  return s;
}

/// One layer's bar: `value` of `full` as a bar of up to kBarWidth at x, labelled with the value.
std::string svg_bar(int x, int y, int64_t value, int64_t full) {
  const int bar = full > 0 ? static_cast<int>(kBarWidth * value / full) : 0;
  return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#2c7fb8\"/>\n"
                     "<text x=\"{}\" y=\"{}\">{}</text>\n",
                     x, y + 6, bar, kCell - 12, x + bar + 4, y + kCell / 2 + 4, value);
}

}  // namespace

std::string to_svg(const HeadReport& r) {
  const int heads = static_cast<int>(r.num_attention_heads);
  const int rows = static_cast<int>(r.layers.size());
  const int bar_x = kLeft + heads * kCell + kBarGap;
  const int ffn_x = bar_x + kBarWidth + 40 + kBarGap;  // after the heads bar and its label
  const int width = std::max((r.ffn_widths.empty() ? bar_x : ffn_x) + kBarWidth + 40, 500);
  const int height = kTop + rows * kCell + 20;
  std::string s = svg_header(r, width, height);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">head</text>\n", kLeft - 6,
                   kTop - 8);
  for (int h = 0; h < heads; ++h)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + h * kCell + kCell / 2, kTop - 8, h);
  s += fmt::format("<text x=\"{}\" y=\"{}\">heads kept per layer</text>\n", bar_x, kTop - 8);
  if (!r.ffn_widths.empty()) s += fmt::format("<text x=\"{}\" y=\"{}\">FFN neurons kept</text>\n", ffn_x, kTop - 8);
  for (int l = 0; l < rows; ++l) {
    const auto& lr = r.layers[static_cast<size_t>(l)];
    const int y = kTop + l * kCell;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">layer {}</text>\n", kLeft - 6,
                     y + kCell / 2 + 4, l);
    for (int h = 0; h < heads; ++h) s += svg_cell(lr, static_cast<size_t>(h), l, kLeft + h * kCell, y);
    s += svg_bar(bar_x, y, static_cast<int64_t>(lr.kept_indices().size()), heads);
    if (!r.ffn_widths.empty())
      s += svg_bar(ffn_x, y, r.ffn_widths[static_cast<size_t>(l)], r.ffn_widths_original[static_cast<size_t>(l)]);
  }
  return s + "</svg>\n";
}

}  // namespace headprune::pruner
