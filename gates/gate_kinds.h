// Which structures a run gates (`--prune`): attention heads always; with FFN gating also each
// layer's feed-forward neurons in blocks (CoFi's intermediate-dimension masks, Xia et al. 2022
// §3.1, gated in blocks as Kwon et al. 2022 group neurons), all under one Lagrangian.
#pragma once

#include <string>

namespace headprune::gates {

enum class GateKinds {
  kHeads,        ///< attention heads only (the default)
  kHeadsAndFfn,  ///< heads and FFN neuron blocks
};

/// "heads" / "heads,ffn" (in either order).
/// @throws headprune::UsageError naming an unknown kind, a list without heads, or "layers"
///         (whole-sublayer gates, not built).
GateKinds parse_gate_kinds(const std::string& list);
std::string to_string(GateKinds kinds);

}  // namespace headprune::gates
