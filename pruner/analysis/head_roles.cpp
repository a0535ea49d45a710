#include "pruner/analysis/head_roles.h"

#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

namespace headprune::pruner {
namespace {

/// Lower end of the 95% Wilson score interval of a proportion (Wilson 1927): what the head's
/// accuracy is at least, given how few dependencies a rare relation has.
double wilson_lower(const RelationScore& score) {
  if (score.total == 0) return 0.0;
  constexpr double z = 1.959964;
  const double n = static_cast<double>(score.total), p = score.accuracy();
  const double centre = p + z * z / (2 * n), spread = z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n));
  return (centre - spread) / (1 + z * z / n);
}

/// Relations where this head finds the governor (or dependent) clearly more often than the
/// relation's best fixed offset does, as "relation>gov" / "relation<dep".
void add_syntactic(const HeadStats& st, const HeadStatsAccumulator& all, const RoleThresholds& t,
                   std::vector<std::string>& roles) {
  for (const bool up : {true, false}) {
    const auto& scores = up ? st.to_governor : st.to_dependent;
    const auto& baselines = all.baselines(up);
    for (const auto& [relation, score] : scores) {
      const auto base = baselines.find(relation);
      const double baseline = base == baselines.end() ? 0.0 : base->second.score.accuracy();
      if (score.total >= t.syntactic_minimum && wilson_lower(score) >= baseline + t.syntactic_margin)
        roles.push_back(fmt::format("syntactic:{}{}", relation, up ? ">gov" : "<dep"));
    }
  }
}

}  // namespace

std::vector<std::string> head_roles(const HeadStats& st, const HeadStatsAccumulator& all,
                                    const RoleThresholds& t) {
  std::vector<std::string> roles;
  if (st.queries == 0) return roles;
  const auto [offset, share] = st.best_offset();
  if (share >= t.positional) roles.push_back(fmt::format("positional:{:+d}", offset));
  add_syntactic(st, all, t, roles);
  if (st.previous_punctuation_share() >= t.positional) roles.push_back("previous-punctuation");
  if (st.rare_sentences > 0 && st.rare_share() >= t.rare_token) roles.push_back("rare-token");
  if (st.delimiter_mass() >= t.mass) roles.push_back("delimiter");
  if (st.mean(st.first_mass) >= t.mass) roles.push_back("sink");
  if (st.mean(st.punctuation_mass) >= t.mass) roles.push_back("punctuation");
  return roles;
}

std::string primary_role(const std::vector<std::string>& roles) {
  if (roles.empty()) return "other";
  return roles.front().substr(0, roles.front().find(':'));
}

double effective_rank(const torch::Tensor& query, const torch::Tensor& key) {
  const auto rq = std::get<1>(torch::linalg_qr(query.to(torch::kDouble).t(), "reduced"));
  const auto rk = std::get<1>(torch::linalg_qr(key.to(torch::kDouble).t(), "reduced"));
  const auto sigma = torch::linalg_svdvals(torch::matmul(rq, rk.t()));
  const double total = sigma.sum().item<double>();
  if (total <= 0) return 0.0;
  const auto p = sigma / total;
  return std::exp(-(p * p.clamp_min(1e-300).log()).sum().item<double>());
}

nlohmann::json head_stats_json(const HeadStats& st, const HeadStatsAccumulator& all) {
  nlohmann::json offsets = nlohmann::json::object();
  for (int64_t o = -kMaxTrackedOffset; o <= kMaxTrackedOffset; ++o) {
    const auto hits = st.offset_hits[o + kMaxTrackedOffset];
    if (hits > 0) offsets[fmt::format("{:+d}", o)] = static_cast<double>(hits) / st.queries;
  }
  nlohmann::json syntax = nlohmann::json::object();
  for (const bool up : {true, false})
    for (const auto& [relation, score] : up ? st.to_governor : st.to_dependent) {
      const auto& base = all.baselines(up).at(relation);
      syntax[relation][up ? "to_governor" : "to_dependent"] = {
          {"accuracy", score.accuracy()}, {"count", score.total},
          {"baseline_offset", base.offset}, {"baseline_accuracy", base.score.accuracy()}};
    }
  return {{"queries", st.queries},
          {"offset_share", offsets},
          {"previous_punctuation_share", st.previous_punctuation_share()},
          {"rare_token_share", st.rare_share()},
          {"rare_token_sentences", st.rare_sentences},
          {"first_token_mass", st.mean(st.first_mass)},
          {"special_token_mass", st.mean(st.special_mass)},
          {"punctuation_mass", st.mean(st.punctuation_mass)},
          {"confidence", st.mean(st.max_weight)},
          {"entropy", st.mean(st.entropy)},
          {"syntax", syntax}};
}

}  // namespace headprune::pruner
