// Which structures a run gates (`--prune`): attention heads always; with FFN gating also each
// layer's feed-forward neurons in blocks (CoFi's intermediate-dimension masks, Xia et al. 2022
// §3.1, gated in blocks as Kwon et al. 2022 group neurons); with sublayer gating also one gate
// per layer over its whole attention and one over its whole FFN (CoFi's z_MHA and z_FFN, §3.1),
// all under one Lagrangian.
#pragma once

#include <string>

namespace headprune::gates {

enum class GateKinds {
  kHeads,        ///< attention heads only (the default)
  kHeadsAndFfn,  ///< heads and FFN neuron blocks
  kHeadsFfnAndLayers,  ///< heads, FFN neuron blocks, and each layer's attention and FFN as a whole
};

/// "heads" / "heads,ffn" / "heads,ffn,layers" (in any order).
/// @throws headprune::UsageError naming an unknown kind, a list without heads, or layers
///         without ffn (a sublayer gate's FFN side sits over the FFN blocks' gates).
GateKinds parse_gate_kinds(const std::string& list);
std::string to_string(GateKinds kinds);
/// Whether `kinds` gates FFN neuron blocks (heads,ffn and heads,ffn,layers).
bool gates_ffn(GateKinds kinds);

}  // namespace headprune::gates
