#include "gates/keep_mask.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::gates {
namespace {

/// Layer index of every head (layer-major order).
std::vector<int64_t> layer_of_heads(const std::vector<int64_t>& heads_per_layer) {
  std::vector<int64_t> layer;
  for (size_t l = 0; l < heads_per_layer.size(); ++l)
    layer.insert(layer.end(), heads_per_layer[l], static_cast<int64_t>(l));
  return layer;
}

std::vector<double> to_vector(const torch::Tensor& t) {
  auto s = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return {s.data_ptr<double>(), s.data_ptr<double>() + s.numel()};
}

/// Head indices sorted by ascending score (ties: lower index first, for determinism).
std::vector<int64_t> ascending(const std::vector<double>& v) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v[a] < v[b]; });
  return order;
}

int64_t layer_minimum(int64_t heads, const MaskConstraints& c) {
  return std::min(heads, std::max<int64_t>(0, c.min_heads_per_layer));
}

/// A measure counting heads: each costs 1.
SparsityMeasure head_count_measure(size_t heads) {
  SparsityMeasure m;
  m.head_cost.assign(heads, 1.0);
  m.total_cost = static_cast<double>(heads);
  return m;
}

/// Whether a layer of `heads` heads may keep `kept`: at least its minimum, and a multiple of
/// head_multiple unless it keeps them all.
bool allowed_count(int64_t kept, int64_t heads, const MaskConstraints& c) {
  return kept >= layer_minimum(heads, c) && (kept == heads || kept % std::max<int64_t>(1, c.head_multiple) == 0);
}

/// Whether every layer's count is allowed after removals leave `kept` heads per layer.
bool within_constraints(const std::vector<int64_t>& kept, const std::vector<int64_t>& heads_per_layer,
                        const MaskConstraints& c) {
  for (size_t l = 0; l < kept.size(); ++l)
    if (!allowed_count(kept[l], heads_per_layer[l], c)) return false;
  return true;
}

/// A set of heads removed together (of one layer, or of every layer with uniform_layers).
struct Unit {
  int64_t layer = 0;  ///< the layer of its (first) head
  std::vector<int64_t> heads;
  double score = 0;  ///< mean score of its heads
  double cost = 0;   ///< sum of the heads' costs
};

/// Per layer, the heads of each KV group (in head order).
std::vector<std::map<int64_t, std::vector<int64_t>>> groups_by_layer(
    const std::vector<int64_t>& heads_per_layer, const MaskConstraints& c) {
  const auto layer = layer_of_heads(heads_per_layer);
  if (!c.head_group.empty() && c.head_group.size() != layer.size())
    throw Error(fmt::format("head_group lists {} heads, the model has {}", c.head_group.size(), layer.size()));
  std::vector<std::map<int64_t, std::vector<int64_t>>> groups(heads_per_layer.size());
  for (size_t i = 0; i < layer.size(); ++i)
    groups[layer[i]][c.head_group.empty() ? static_cast<int64_t>(i) : c.head_group[i]].push_back(static_cast<int64_t>(i));
  return groups;
}

/// Joins `a` and `b` (units of one layer) into one unit.
Unit joined(Unit a, const Unit& b) {
  const auto n = static_cast<double>(a.heads.size()), m = static_cast<double>(b.heads.size());
  a.score = (a.score * n + b.score * m) / (n + m);
  a.cost += b.cost;
  a.heads.insert(a.heads.end(), b.heads.begin(), b.heads.end());
  return a;
}

/// head_multiple: per layer, the units in ascending score joined until the heads left are a
/// multiple of head_multiple (the last one leaves 0), so removing them in order keeps every
/// layer's count allowed.
std::vector<Unit> chunked(const std::vector<Unit>& units, const std::vector<int64_t>& heads_per_layer,
                          int64_t multiple) {
  std::vector<std::vector<Unit>> per_layer(heads_per_layer.size());
  for (const auto& u : units) per_layer[u.layer].push_back(u);
  std::vector<Unit> chunks;
  for (size_t l = 0; l < per_layer.size(); ++l) {
    auto& layer = per_layer[l];
    std::stable_sort(layer.begin(), layer.end(), [](const Unit& a, const Unit& b) { return a.score < b.score; });
    int64_t left = heads_per_layer[l];
    std::optional<Unit> open;
    for (const auto& u : layer) {
      open = open ? joined(*open, u) : u;
      left -= static_cast<int64_t>(u.heads.size());
      if (left % multiple == 0) {
        chunks.push_back(std::move(*open));
        open.reset();
      }
    }
  }
  return chunks;
}

/// uniform_layers: level k joins the k-th unit (ascending score) of every layer, so removing
/// levels keeps the layers alike. @throws headprune::Error if the layers' units differ.
std::vector<Unit> layer_levels(const std::vector<Unit>& units, size_t layers) {
  std::vector<std::vector<const Unit*>> per_layer(layers);
  for (const auto& u : units) per_layer[u.layer].push_back(&u);
  std::vector<Unit> levels;
  for (size_t k = 0; k < per_layer.front().size(); ++k) {
    Unit level;
    for (size_t l = 0; l < layers; ++l) {
      if (per_layer[l].size() != per_layer[0].size() || per_layer[l][k]->heads.size() != per_layer[0][k]->heads.size())
        throw Error(fmt::format("--uniform-layers needs every layer to hold the same heads; layer {} "
                                "differs from layer 0 (prune the dense model instead)",
                                l));
      const auto& u = *per_layer[l][k];
      level.heads.insert(level.heads.end(), u.heads.begin(), u.heads.end());
      level.score += u.score * static_cast<double>(u.heads.size());
      level.cost += u.cost;
    }
    level.score /= static_cast<double>(level.heads.size());
    levels.push_back(std::move(level));
  }
  return levels;
}

/// The removal units of the constraints' group rule, in ascending order of score.
std::vector<Unit> removal_units(const std::vector<double>& score, const std::vector<int64_t>& heads_per_layer,
                                const SparsityMeasure& measure, const MaskConstraints& c) {
  std::vector<Unit> units;
  auto add = [&](int64_t l, std::vector<int64_t> heads) {
    Unit u;
    u.layer = l;
    u.heads = std::move(heads);
    for (auto h : u.heads) {
      u.score += score[h];
      u.cost += measure.head_cost[h];
    }
    u.score /= static_cast<double>(u.heads.size());
    units.push_back(std::move(u));
  };
  const auto groups = groups_by_layer(heads_per_layer, c);
  for (size_t l = 0; l < groups.size(); ++l) {
    const auto layer = static_cast<int64_t>(l);
    if (c.group_rule == GroupRule::kNone) {
      for (const auto& [g, heads] : groups[l])
        for (auto h : heads) add(layer, {h});
    } else if (c.group_rule == GroupRule::kWholeGroups) {
      for (const auto& [g, heads] : groups[l]) add(layer, heads);
    } else {  // kUniform: level k = the k-th lowest-scoring head of every group
      std::vector<std::vector<int64_t>> sorted;
      for (const auto& [g, heads] : groups[l]) {
        auto h = heads;
        std::stable_sort(h.begin(), h.end(), [&](int64_t a, int64_t b) { return score[a] < score[b]; });
        if (!sorted.empty() && h.size() != sorted.front().size())
          throw Error(fmt::format("layer {}: its KV groups hold different numbers of query heads "
                                  "({} and {}); --gqa-mode uniform needs equal groups (use "
                                  "--gqa-mode groups)",
                                  l, sorted.front().size(), h.size()));
        sorted.push_back(std::move(h));
      }
      const size_t levels = sorted.empty() ? 0 : sorted.front().size();
      for (size_t k = 0; k < levels; ++k) {
        std::vector<int64_t> heads;
        for (const auto& g : sorted) heads.push_back(g[k]);
        add(layer, heads);
      }
    }
  }
  if (c.head_multiple > 1) units = chunked(units, heads_per_layer, c.head_multiple);
  // Ascending score; within a layer a uniform level (or a chunk) never precedes a lower one
  // (its mean is at least as large, and ties keep the creation order).
  std::stable_sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) { return a.score < b.score; });
  return c.uniform_layers ? layer_levels(units, heads_per_layer.size()) : units;
}

/// Every number of heads that can be removed under the constraints (heads unit).
std::set<int64_t> reachable_counts(const std::vector<int64_t>& heads_per_layer, const MaskConstraints& c) {
  if (c.uniform_layers) {  // whole levels: the sizes removal_units gives them, in order
    const auto layer = layer_of_heads(heads_per_layer);
    const std::vector<double> zero(layer.size(), 0.0);
    std::set<int64_t> counts = {0};
    int64_t removed = 0;
    std::vector<int64_t> kept(heads_per_layer);
    for (const auto& level : removal_units(zero, heads_per_layer, head_count_measure(layer.size()), c)) {
      for (auto h : level.heads) --kept[layer[h]];
      if (!within_constraints(kept, heads_per_layer, c)) return counts;
      counts.insert(removed += static_cast<int64_t>(level.heads.size()));
    }
    return counts;
  }
  const auto groups = groups_by_layer(heads_per_layer, c);
  std::set<int64_t> total = {0};
  for (size_t l = 0; l < groups.size(); ++l) {
    const int64_t removable = heads_per_layer[l] - layer_minimum(heads_per_layer[l], c);
    std::set<int64_t> layer = {0};
    if (c.group_rule == GroupRule::kNone) {
      for (int64_t k = 1; k <= removable; ++k) layer.insert(k);
    } else if (c.group_rule == GroupRule::kUniform) {
      const auto step = static_cast<int64_t>(groups[l].size());
      for (int64_t k = step; step > 0 && k <= removable; k += step) layer.insert(k);
    } else {
      for (const auto& [g, heads] : groups[l]) {
        std::set<int64_t> next = layer;
        for (auto k : layer)
          if (k + static_cast<int64_t>(heads.size()) <= removable) next.insert(k + static_cast<int64_t>(heads.size()));
        layer = std::move(next);
      }
    }
    std::set<int64_t> next;
    for (auto a : total)
      for (auto b : layer)
        if (allowed_count(heads_per_layer[l] - b, heads_per_layer[l], c)) next.insert(a + b);
    total = std::move(next);
  }
  return total;
}

/// Removes units in ascending score while that brings the removed cost closer to `goal` (or,
/// `at_least`, until it reaches `goal`).
std::vector<bool> select(const std::vector<Unit>& units, const std::vector<int64_t>& heads_per_layer,
                         const SparsityMeasure& measure, double goal, const MaskConstraints& c,
                         bool at_least = false) {
  const auto layer = layer_of_heads(heads_per_layer);
  std::vector<bool> keep(layer.size(), true);
  std::vector<int64_t> kept(heads_per_layer);
  double removed = 0;
  for (const auto& u : units) {
    auto left = kept;
    for (auto h : u.heads) --left[layer[h]];
    if (!within_constraints(left, heads_per_layer, c)) continue;
    if (at_least && removed >= goal - 1e-9 * measure.total_cost) break;
    const double after = measure.layer_cost.empty() ? removed + u.cost : measure.removed_cost(left);
    // Remove while it brings us closer; ties (exactly halfway) round towards removing.
    if (!at_least && std::abs(after - goal) > std::abs(removed - goal) + 1e-9 * measure.total_cost) {
      if (c.group_rule == GroupRule::kNone && c.head_multiple <= 1) break;
      continue;  // a smaller unit later may still fit
    }
    for (auto h : u.heads) keep[h] = false;
    kept = std::move(left);
    removed = after;
  }
  return keep;
}

/// The options that restrict which head counts can be removed ("--gqa-mode uniform with
/// --uniform-layers") and how they remove heads, for validate_target's message.
std::pair<std::string, std::string> removal_rule(const MaskConstraints& c) {
  std::string rule = c.group_rule == GroupRule::kNone ? "" : fmt::format("--gqa-mode {}", to_string(c.group_rule));
  std::string how = c.group_rule == GroupRule::kUniform       ? "one per KV group at a time, keeping the groups even"
                    : c.group_rule == GroupRule::kWholeGroups ? "as whole KV groups"
                    : c.uniform_layers                        ? "one per layer at a time"
                                                              : "";
  const auto add = [](std::string& text, const std::string& more, const char* joint) {
    text += (text.empty() ? "" : joint) + more;
  };
  if (c.head_multiple > 1) {
    add(rule, fmt::format("--head-multiple {}", c.head_multiple), " with ");
    add(how, fmt::format("so that every layer keeps a multiple of {} heads (or all of them)", c.head_multiple), ", ");
  }
  if (c.uniform_layers) {
    add(rule, "--uniform-layers", " with ");
    how += ", in every layer alike";
  }
  return {rule, how};
}

}  // namespace

const char* to_string(GroupRule rule) {
  switch (rule) {
    case GroupRule::kNone: return "none";
    case GroupRule::kWholeGroups: return "groups";
    case GroupRule::kUniform: return "uniform";
  }
  return "?";
}

GroupRule parse_group_rule(const std::string& name) {
  if (name == "none") return GroupRule::kNone;
  if (name == "groups") return GroupRule::kWholeGroups;
  if (name == "uniform") return GroupRule::kUniform;
  throw Error(fmt::format("unknown GQA mode '{}': use none, groups or uniform", name));
}

std::vector<bool> keep_mask_from_gates(const torch::Tensor& gate, const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const MaskConstraints& constraints) {
  const auto g = to_vector(gate);
  const auto n = static_cast<int64_t>(g.size());
  if (constraints.group_rule != GroupRule::kNone || constraints.uniform_layers || constraints.head_multiple > 1) {
    // Remove as many heads as gates closed, rounded to what the rules can remove.
    int64_t closed = 0;
    for (auto v : g) closed += v <= 0;
    const auto counts = reachable_counts(heads_per_layer, constraints);
    int64_t best = 0;
    for (auto k : counts)
      if (std::abs(k - closed) < std::abs(best - closed)) best = k;
    const auto heads = head_count_measure(static_cast<size_t>(n));
    return select(removal_units(to_vector(score), heads_per_layer, heads, constraints),
                  heads_per_layer, heads, static_cast<double>(best), constraints);
  }
  std::vector<bool> keep(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) keep[i] = g[i] > 0;
  const auto layer = layer_of_heads(heads_per_layer);
  std::vector<int64_t> kept(heads_per_layer.size(), 0);
  for (int64_t i = 0; i < n; ++i) kept[layer[i]] += keep[i];
  auto order = ascending(to_vector(score));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // best heads first
    const auto l = layer[*it];
    if (!keep[*it] && kept[l] < layer_minimum(heads_per_layer[l], constraints)) {
      keep[*it] = true;
      ++kept[l];
    }
  }
  return keep;
}

double max_sparsity(const std::vector<int64_t>& heads_per_layer, const SparsityMeasure& measure,
                    const MaskConstraints& constraints) {
  // Remove every unit the per-layer minimums allow (a goal beyond the total cost never stops
  // the selection early); scores do not matter, since the constraints are per layer and all
  // heads of a layer cost the same in every unit.
  std::vector<double> zero(measure.head_cost.size(), 0.0);
  auto units = removal_units(zero, heads_per_layer, measure, constraints);
  return measure.of_mask(select(units, heads_per_layer, measure, measure.total_cost * 2, constraints));
}

void validate_target(double target, const std::vector<int64_t>& heads_per_layer,
                     const SparsityMeasure& measure, const MaskConstraints& constraints) {
  if (!(target >= 0 && target < 1))
    throw Error(fmt::format("target sparsity {} is outside [0, 1)", target));
  const double reachable = max_sparsity(heads_per_layer, measure, constraints);
  if (target > reachable + 1e-9)
    throw Error(fmt::format(
        "target sparsity {:.3f} ({}) cannot be reached: with --min-heads-per-layer {}{}{} at most "
        "{:.3f} can be removed{}",
        target, to_string(measure.unit), constraints.min_heads_per_layer,
        constraints.group_rule == GroupRule::kNone ? "" : fmt::format(" and --gqa-mode {}", to_string(constraints.group_rule)),
        constraints.head_multiple > 1 ? fmt::format(" and --head-multiple {}", constraints.head_multiple) : "",
        reachable,
        constraints.min_heads_per_layer > 0 ? " (use --allow-empty-layers or lower the minimum)"
                                            : ""));
  if (measure.unit != SparsityUnit::kHeads ||
      (constraints.group_rule == GroupRule::kNone && !constraints.uniform_layers && constraints.head_multiple <= 1))
    return;
  const auto total = static_cast<int64_t>(measure.head_cost.size());
  const auto want = static_cast<int64_t>(std::llround(target * static_cast<double>(total)));
  const auto counts = reachable_counts(heads_per_layer, constraints);
  if (counts.count(want)) return;
  auto above = counts.lower_bound(want);
  const int64_t below = *std::prev(above);
  const auto [rule, how] = removal_rule(constraints);
  throw Error(fmt::format(
      "target sparsity {} asks to remove {} of {} query heads, but {} removes heads only {} "
      "(per layer: {}), so {} cannot be removed exactly; nearest: {} ({:.3f}){}. Choose one of "
      "those targets{}",
      target, want, total,
      rule, how,
      fmt::format("{} heads", fmt::join(heads_per_layer, "/")), want, below,
      static_cast<double>(below) / static_cast<double>(total),
      above == counts.end() ? std::string()
                            : fmt::format(" or {} ({:.3f})", *above,
                                          static_cast<double>(*above) / static_cast<double>(total)),
      constraints.head_multiple > 1         ? " or another --head-multiple"
      : constraints.group_rule == GroupRule::kNone ? " or drop --uniform-layers"
                                                   : " or another --gqa-mode"));
}

std::vector<bool> keep_mask_for_target(const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const SparsityMeasure& measure, double target,
                                       const MaskConstraints& constraints, bool at_least) {
  validate_target(target, heads_per_layer, measure, constraints);
  return select(removal_units(to_vector(score), heads_per_layer, measure, constraints),
                heads_per_layer, measure, target * measure.total_cost, constraints, at_least);
}

}  // namespace headprune::gates
