#include "gates/gate_kinds.h"

#include <set>
#include <sstream>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::gates {

GateKinds parse_gate_kinds(const std::string& list) {
  std::set<std::string> kinds;
  std::stringstream in(list);
  for (std::string kind; std::getline(in, kind, ',');) {
    if (kind == "layers")
      throw UsageError("--prune layers: whole attention / FFN sublayer gates are not built yet; prune heads,ffn "
                       "(or drop layers with sweep --baselines layers)");
    if (kind != "heads" && kind != "ffn")
      throw UsageError(fmt::format("--prune: unknown kind '{}' (kinds: heads, ffn)", kind));
    kinds.insert(kind);
  }
  if (!kinds.count("heads"))
    throw UsageError(fmt::format("--prune {}: the heads are always gated; give heads or heads,ffn", list));
  return kinds.count("ffn") ? GateKinds::kHeadsAndFfn : GateKinds::kHeads;
}

std::string to_string(GateKinds kinds) { return kinds == GateKinds::kHeadsAndFfn ? "heads,ffn" : "heads"; }

}  // namespace headprune::gates
