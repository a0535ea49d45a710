#include "pruner/analysis/head_roles_svg.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pruner/format.h"

namespace headprune::pruner {
namespace {

constexpr int kCell = 26, kLeft = 64, kTop = 96;
constexpr const char* kAbsentFill = "#ffffff";

/// Colour of each primary role (ColorBrewer Dark2, readable when printed in grey too).
const std::vector<std::pair<std::string, std::string>>& role_colours() {
  static const std::vector<std::pair<std::string, std::string>> colours = {
      {"positional", "#1b9e77"}, {"syntactic", "#d95f02"},  {"rare-token", "#7570b3"},
      {"sink", "#e7298a"},       {"delimiter", "#66a61e"},  {"punctuation", "#e6ab02"},
      {"previous-punctuation", "#a6761d"}, {"other", "#d9d9d9"}};
  return colours;
}

std::string role_fill(const std::string& role) {
  for (const auto& [name, colour] : role_colours())
    if (name == role) return colour;
  return "#d9d9d9";
}

std::string legend(const HeadAnalysis& a) {
  std::string s;
  int x = 12;
  for (const auto& [name, colour] : role_colours()) {
    s += fmt::format("<rect x=\"{}\" y=\"42\" width=\"12\" height=\"12\" fill=\"{}\"/>"
                     "<text x=\"{}\" y=\"52\">{}</text>\n",
                     x, colour, x + 16, name);
    x += 24 + 7 * static_cast<int>(name.size());
  }
  s += "<rect x=\"12\" y=\"62\" width=\"12\" height=\"12\" fill=\"#fff\" stroke=\"#999\" "
       "stroke-dasharray=\"2,2\"/><text x=\"28\" y=\"72\">absent (removed earlier)</text>\n";
  if (a.gates)
    s += "<path d=\"M190 64 L200 74 M200 64 L190 74\" stroke=\"#222\" stroke-width=\"2\"/>"
         "<text x=\"206\" y=\"72\">removed by the gates</text>\n";
  return s;
}

/// The hover text of a present head.
std::string cell_title(const HeadAnalysis& a, size_t l, size_t h) {
  std::string t = fmt::format("layer {} head {}: {}", l, a.kept_heads[l][h],
                              a.roles[l][h].empty() ? "no role" : fmt::format("{}", fmt::join(a.roles[l][h], ", ")));
  if (!a.importance.empty()) t += fmt::format("; importance {:.5f}", a.importance[l][h]);
  if (a.gates)
    t += fmt::format("; log_alpha {:.2f}, {}", a.gates->layers[l].log_alpha[h],
                     a.gates->layers[l].keep[h] ? "kept" : "removed");
  return t;
}

std::string present_cell(const HeadAnalysis& a, size_t l, size_t h, int x, int y) {
  std::string s = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"white\">"
                              "<title>{}</title></rect>\n",
                              x, y, kCell, kCell, role_fill(primary_role(a.roles[l][h])),
                              xml_escape(cell_title(a, l, h)));
  if (a.gates && !a.gates->layers[l].keep[h])
    s += fmt::format("<path d=\"M{} {} L{} {} M{} {} L{} {}\" stroke=\"#222\" stroke-width=\"2\"/>\n", x + 7,
                     y + 7, x + kCell - 7, y + kCell - 7, x + kCell - 7, y + 7, x + 7, y + kCell - 7);
  return s;
}

std::string absent_cell(size_t l, int64_t head, int x, int y) {
  return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#999\" "
                     "stroke-dasharray=\"2,2\"><title>layer {} head {}: removed earlier</title></rect>\n",
                     x + 2, y + 2, kCell - 4, kCell - 4, kAbsentFill, l, head);
}

}  // namespace

std::string roles_svg(const HeadAnalysis& a, int64_t num_attention_heads) {
  const int heads = static_cast<int>(num_attention_heads), rows = static_cast<int>(a.roles.size());
  const int width = std::max(kLeft + heads * kCell + 20, 760), height = kTop + rows * kCell + 16;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"12\" y=\"22\" font-size=\"15\">What each head does ({} sentences, {} tokens)</text>\n",
      width, height, a.sentences, a.tokens);
  s += legend(a);
  for (int h = 0; h < heads; ++h)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + h * kCell + kCell / 2,
                     kTop - 6, h);
  for (size_t l = 0; l < a.roles.size(); ++l) {
    const int y = kTop + static_cast<int>(l) * kCell;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">layer {}</text>\n", kLeft - 6, y + kCell / 2 + 4, l);
    std::map<int64_t, size_t> present;  // original head -> index among present heads
    for (size_t h = 0; h < a.kept_heads[l].size(); ++h) present[a.kept_heads[l][h]] = h;
    for (int64_t h = 0; h < num_attention_heads; ++h) {
      const int x = kLeft + static_cast<int>(h) * kCell;
      const auto it = present.find(h);
      s += it == present.end() ? absent_cell(l, h, x, y) : present_cell(a, l, it->second, x, y);
    }
  }
  return s + "</svg>\n";
}

}  // namespace headprune::pruner
