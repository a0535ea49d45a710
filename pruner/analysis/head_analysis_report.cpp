// HeadAnalysis as JSON and as a table (pruner/analysis/head_analysis.h).
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pruner/analysis/head_analysis.h"
#include "pruner/analysis/head_roles_svg.h"

namespace headprune::pruner {
namespace {

/// "kept" / "removed" by the gates, or "" without gates.
std::string gate_fate(const std::optional<GateState>& gates, size_t layer, size_t head) {
  if (!gates) return "";
  return gates->layers[layer].keep[head] ? "kept" : "removed";
}

nlohmann::json baselines_json(const HeadStatsAccumulator& stats) {
  nlohmann::json out = nlohmann::json::object();
  for (const bool up : {true, false})
    for (const auto& [relation, base] : stats.baselines(up))
      out[relation][up ? "to_governor" : "to_dependent"] = {
          {"offset", base.offset}, {"accuracy", base.score.accuracy()}, {"count", base.score.total}};
  return out;
}

}  // namespace

nlohmann::json HeadAnalysis::to_json() const {
  nlohmann::json heads = nlohmann::json::array();
  for (size_t l = 0; l < roles.size(); ++l)
    for (size_t h = 0; h < roles[l].size(); ++h) {
      nlohmann::json j = {{"layer", l},
                          {"head", kept_heads[l][h]},
                          {"roles", roles[l][h]},
                          {"primary_role", primary_role(roles[l][h])},
                          {"effective_rank", effective_rank[l][h]},
                          {"stats", head_stats_json(stats->heads()[l][h], *stats)}};
      if (!importance.empty()) j["importance"] = importance[l][h];
      if (gates) {
        j["log_alpha"] = gates->layers[l].log_alpha[h];
        j["fate"] = gate_fate(gates, l, h);
      }
      heads.push_back(j);
    }
  return {{"sentences", sentences},
          {"tokens", tokens},
          {"seconds", seconds},
          {"heads", heads},
          {"roles", role_counts()},
          {"mean_importance", mean_importance()},
          {"relation_baselines", baselines_json(*stats)}};
}

nlohmann::json HeadAnalysis::mean_importance() const {
  if (importance.empty()) return nullptr;
  std::map<std::string, std::pair<double, int64_t>> sums;  // fate -> (sum, heads)
  for (size_t l = 0; l < importance.size(); ++l)
    for (size_t h = 0; h < importance[l].size(); ++h)
      for (const auto& fate : {std::string("all"), gate_fate(gates, l, h)}) {
        if (fate.empty()) continue;
        sums[fate].first += importance[l][h];
        ++sums[fate].second;
      }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [fate, sum] : sums) out[fate] = sum.first / static_cast<double>(sum.second);
  return out;
}

nlohmann::json HeadAnalysis::role_counts() const {
  nlohmann::json counts = nlohmann::json::object();
  for (size_t l = 0; l < roles.size(); ++l)
    for (size_t h = 0; h < roles[l].size(); ++h) {
      auto& entry = counts[primary_role(roles[l][h])];
      if (entry.is_null()) entry = {{"all", 0}};
      entry["all"] = entry["all"].get<int64_t>() + 1;
      if (gates) {
        const auto fate = gate_fate(gates, l, h);
        entry[fate] = entry.value(fate, 0) + 1;
      }
    }
  return counts;
}

std::map<std::string, std::string> HeadAnalysis::files() const {
  return {{"headprune/head_roles.json", to_json().dump(1) + "\n"},
          {"headprune/head_roles.txt", table()},
          {"headprune/head_roles.svg", roles_svg(*this, num_attention_heads)}};
}

std::string HeadAnalysis::table() const {
  std::ostringstream out;
  out << fmt::format("{:>5} {:>4} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>5} {:>6} {:>8}{}  {}\n", "layer", "head",
                     "offset", "share", "first", "delim", "rare", "conf", "ent", "rank", "import",
                     gates ? "  log_a  fate   " : "", "roles");
  for (size_t l = 0; l < roles.size(); ++l)
    for (size_t h = 0; h < roles[l].size(); ++h) {
      const auto& st = stats->heads()[l][h];
      const auto [offset, share] = st.best_offset();
      const auto gate = gates ? fmt::format("  {:>5.2f}  {:<7}", gates->layers[l].log_alpha[h], gate_fate(gates, l, h))
                              : std::string();
      const auto imp = importance.empty() ? std::string("-") : fmt::format("{:.5f}", importance[l][h]);
      out << fmt::format("{:>5} {:>4} {:>+7d} {:>6.3f} {:>6.3f} {:>6.3f} {:>6.3f} {:>6.3f} {:>5.2f} {:>6.1f} {:>8}{}  {}\n",
                         l, kept_heads[l][h], offset, share, st.mean(st.first_mass),
                         st.delimiter_mass(), st.rare_share(), st.mean(st.max_weight),
                         st.mean(st.entropy), effective_rank[l][h], imp, gate,
                         roles[l][h].empty() ? "-" : fmt::format("{}", fmt::join(roles[l][h], " ")));
    }
  return out.str();
}

}  // namespace headprune::pruner
