// The pictures headprune writes are legible: no text box overlaps another or leaves the canvas.
// Text boxes are estimated from the font size (DejaVu Sans: at most 0.62 em per character on
// average for the digits and lower-case text used here; ascent 0.8 em, descent 0.25 em).
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pruner/jobs/sweep.h"
#include "pruner/report/report.h"

namespace hp = headprune;

namespace {

struct Box {
  double x0, y0, x1, y1;
  std::string text;
};

double attribute(const std::string& tag, const std::string& name, double fallback) {
  std::smatch m;
  if (std::regex_search(tag, m, std::regex(" " + name + "=\"([-0-9.]+)\""))) return std::stod(m[1]);
  return fallback;
}

/// The estimated box of every <text> element of `svg`; `width`/`height` from the root.
std::vector<Box> text_boxes(const std::string& svg, double& width, double& height) {
  width = attribute(svg.substr(0, svg.find('>')), "width", 0);
  height = attribute(svg.substr(0, svg.find('>')), "height", 0);
  const double base = attribute(svg.substr(0, svg.find('>')), "font-size", 11);
  std::vector<Box> boxes;
  const std::regex text_re("<text([^>]*)>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text_re); it != std::sregex_iterator(); ++it) {
    const std::string tag = (*it)[1], text = (*it)[2];
    const double size = attribute(tag, "font-size", base), w = 0.62 * size * static_cast<double>(text.size());
    const double x = attribute(tag, "x", 0), y = attribute(tag, "y", 0);
    const double shift = tag.find("text-anchor=\"middle\"") != std::string::npos ? w / 2
                         : tag.find("text-anchor=\"end\"") != std::string::npos  ? w
                                                                                : 0;
    if (tag.find("rotate(-90") != std::string::npos)  // reads upwards; x, y is the anchor
      boxes.push_back({x - 0.8 * size, y - w + shift, x + 0.25 * size, y + shift, text});
    else
      boxes.push_back({x - shift, y - 0.8 * size, x - shift + w, y + 0.25 * size, text});
  }
  return boxes;
}

/// Fails for every pair of overlapping boxes and every box outside the canvas.
void check_legible(const std::string& svg) {
  double width = 0, height = 0;
  const auto boxes = text_boxes(svg, width, height);
  CATCH_REQUIRE(boxes.size() > 5);
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const auto& a = boxes[i];
    CATCH_CAPTURE(a.text, a.x0, a.y0, a.x1, a.y1);
    CATCH_CHECK((a.x0 >= 0 && a.y0 >= 0 && a.x1 <= width && a.y1 <= height));
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const auto& b = boxes[j];
      CATCH_CAPTURE(b.text, b.x0, b.y0, b.x1, b.y1);
      CATCH_CHECK_FALSE((a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1));
    }
  }
}

/// A report with `heads` heads in each of `layers` layers; every third head removed.
hp::pruner::HeadReport report(int64_t heads, std::size_t layers) {
  hp::pruner::HeadReport r;
  r.source = "model";
  r.num_attention_heads = heads;
  for (std::size_t l = 0; l < layers; ++l) {
    hp::pruner::LayerReport lr;
    for (int64_t h = 0; h < heads; ++h) {
      lr.present.push_back(h != 1);
      lr.kept.push_back(h % 3 != 0);
      lr.gate.push_back(h % 3 != 0 ? 0.9 : 0.7);
    }
    r.layers.push_back(lr);
  }
  return r;
}

/// The sweep of docs/results.md (MiniLM, STS-B dev), optionally without speedups.
nlohmann::json minilm_sweep(bool measured) {
  nlohmann::json sweep = {{"model", ".cache/models/all-MiniLM-L6-v2"}, {"quality", "sts_spearman"},
                          {"dense", {{"heads_kept", 72}, {"speedup", 1.0}, {"quality", 86.72}}},
                          {"points", nlohmann::json::array()}};
  const double targets[] = {0.25, 0.5, 0.75}, quality[] = {86.66, 85.51, 83.95}, speedup[] = {1.131, 1.309, 1.476};
  const int kept[] = {54, 36, 18};
  for (int i = 0; i < 3; ++i) {
    nlohmann::json p = {{"target", targets[i]}, {"heads_kept", kept[i]}, {"quality", quality[i]},
                        {"params_after", 20000000}};
    if (measured) p["speedup"] = speedup[i], p["flops_ratio"] = 1.2;
    sweep["points"].push_back(p);
  }
  return sweep;
}

}  // namespace

CATCH_TEST_CASE("heads.svg: no text overlaps another or the edge (12, 8 and 4 heads)", "[svg]") {
  for (auto [heads, layers] : {std::pair<int64_t, std::size_t>{12, 6}, {8, 2}, {4, 30}, {32, 4}}) {
    CATCH_CAPTURE(heads, layers);
    check_legible(hp::pruner::to_svg(report(heads, layers)));
    auto with_ffn = report(heads, layers);  // a second bar: FFN neurons kept per layer
    with_ffn.ffn_widths_original.assign(layers, 1536);
    for (std::size_t l = 0; l < layers; ++l) with_ffn.ffn_widths.push_back(l % 2 ? 1536 : 32 * static_cast<int64_t>(l));
    check_legible(hp::pruner::to_svg(with_ffn));
  }
}

CATCH_TEST_CASE("sweep.svg: no text overlaps another or the edge, measured or not", "[svg]") {
  check_legible(hp::pruner::sweep_svg(minilm_sweep(true)));
  const auto unmeasured = hp::pruner::sweep_svg(minilm_sweep(false));
  check_legible(unmeasured);
  CATCH_CHECK(unmeasured.find("speedup not measured") != std::string::npos);
  CATCH_CHECK(hp::pruner::sweep_table(minilm_sweep(false)).find("not measured") != std::string::npos);
  CATCH_CHECK(hp::pruner::sweep_table(minilm_sweep(true)).find("1.309x") != std::string::npos);
}
