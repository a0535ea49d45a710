#include "pruner/report/report_roles.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "models/config.h"
#include "pruner/analysis/head_roles.h"

namespace headprune::pruner {
namespace {

/// "3 positional:-1" or "3 -" for a head without a role.
std::string head_with_roles(size_t head, const std::vector<std::string>& roles) {
  return fmt::format("{} {}", head, roles.empty() ? std::string("-") : fmt::format("{}", fmt::join(roles, "+")));
}

}  // namespace

void read_report_roles(HeadReport& r, const std::filesystem::path& file) {
  const auto json = models::read_json_file(file);
  if (!json.contains("heads") || !json["heads"].is_array())
    throw Error(fmt::format("{} is not a headprune head_roles.json (no 'heads' list)", file.string()));
  const auto n = static_cast<size_t>(r.num_attention_heads);
  for (auto& lr : r.layers) lr.roles.assign(n, {});
  for (const auto& head : json["heads"]) {
    const auto l = head.value("layer", int64_t{-1}), h = head.value("head", int64_t{-1});
    if (l < 0 || static_cast<size_t>(l) >= r.layers.size() || h < 0 || static_cast<size_t>(h) >= n ||
        !head.contains("roles") || !head["roles"].is_array())
      throw Error(fmt::format("{}: an entry names layer {} head {} (the model has {} layers of {} heads) or has "
                              "no 'roles' list",
                              file.string(), l, h, r.layers.size(), n));
    r.layers[static_cast<size_t>(l)].roles[static_cast<size_t>(h)] = head["roles"].get<std::vector<std::string>>();
  }
}

std::string roles_text(const HeadReport& r) {
  if (r.layers.empty() || r.layers.front().roles.empty()) return "";
  std::string out = "\nroles of the heads (prune --analyze, measured on the model before pruning):\n";
  std::map<std::string, std::pair<int64_t, int64_t>> per_role;  // primary role -> (kept, removed)
  for (size_t l = 0; l < r.layers.size(); ++l) {
    const auto& lr = r.layers[l];
    std::vector<std::string> kept, removed;
    for (size_t h = 0; h < lr.roles.size(); ++h) {
      if (!lr.present[h]) continue;
      (lr.kept[h] ? kept : removed).push_back(head_with_roles(h, lr.roles[h]));
      auto& count = per_role[primary_role(lr.roles[h])];
      ++(lr.kept[h] ? count.first : count.second);
    }
    out += fmt::format("layer {:>2}  kept: {}\n          removed: {}\n", l, fmt::join(kept, ", "),
                       removed.empty() ? std::string("-") : fmt::format("{}", fmt::join(removed, ", ")));
  }
  out += "heads per role, kept / removed:";
  for (const auto& [role, count] : per_role) out += fmt::format("  {} {}/{}", role, count.first, count.second);
  return out + "\n";
}

}  // namespace headprune::pruner
