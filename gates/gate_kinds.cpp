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
    if (kind != "heads" && kind != "ffn" && kind != "layers")
      throw UsageError(fmt::format("--prune: unknown kind '{}' (kinds: heads, ffn, layers)", kind));
    kinds.insert(kind);
  }
  if (!kinds.count("heads"))
    throw UsageError(fmt::format("--prune {}: the heads are always gated; give heads, heads,ffn or heads,ffn,layers",
                                 list));
  if (kinds.count("layers") && !kinds.count("ffn"))
    throw UsageError(fmt::format("--prune {}: whole-sublayer gates sit over the heads' and the FFN blocks' gates; "
                                 "give heads,ffn,layers",
                                 list));
  if (kinds.count("layers")) return GateKinds::kHeadsFfnAndLayers;
  return kinds.count("ffn") ? GateKinds::kHeadsAndFfn : GateKinds::kHeads;
}

std::string to_string(GateKinds kinds) {
  switch (kinds) {
    case GateKinds::kHeads: return "heads";
    case GateKinds::kHeadsAndFfn: return "heads,ffn";
    case GateKinds::kHeadsFfnAndLayers: return "heads,ffn,layers";
  }
  return "?";
}

bool gates_ffn(GateKinds kinds) { return kinds != GateKinds::kHeads; }

}  // namespace headprune::gates
