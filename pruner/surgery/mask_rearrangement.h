// Mask rearrangement between gate training and surgery: within a layer, a kept head and a
// removed one (with grouped-query attention also a kept KV group and a removed one; with FFN
// gates a kept FFN block and a removed one) trade places when that
// lowers the distillation loss on calibration text, so every layer keeps as many heads and FFN
// neurons as the trained mask gave it (same size, same speed). Kwon et al. rearrange heads and
// FFN neurons alike.
//
// Kwon et al. 2022, "A Fast Post-Training Pruning Framework for Transformers", §4.2 (mask
// rearrangement): the mask search ranks heads one at a time, which ignores how heads of a layer
// interact; rearranging within each layer at its head count repairs that. They rank swaps with
// a block-diagonal Fisher approximation; here each candidate swap is scored by the loss itself
// (the objective gate training minimised: pruner/objectives/distillation.h, the gated model
// against the dense one, on the first calibration sequences), greedily, layer by layer
// (first to last), among the few weakest kept and strongest removed heads by log_alpha.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/records/gate_record.h"

namespace headprune::pruner {

/// Settings of a rearrangement (`--rearrange`).
struct RearrangeOptions {
  bool enabled = false;
  std::size_t max_sequences = 64;  ///< calibration sequences (the first ones given)
  std::size_t batch_size = 16;
  /// Per layer the `candidates` lowest-log_alpha kept heads × the `candidates` highest removed
  /// ones are tried (candidates² losses per round).
  int64_t candidates = 3;
  int64_t max_rounds = 2;  ///< improving swaps per layer at most
  bool fold_gates = true;  ///< as the surgery will (kept heads at their gate value, else 1)
  torch::Device device = torch::kCPU;
};

/// What a swap trades: two heads of a layer, two of its KV groups (every query head of one for
/// every query head of the other: what --gqa-mode groups masks can trade), or two of its FFN
/// blocks (--prune heads,ffn).
enum class SwapUnit { kHead, kKvGroup, kFfnBlock };
/// "head", "kv_group" or "ffn_block" (gates.json's rearranged.swaps[].unit).
const char* to_string(SwapUnit unit);

/// One swap made: in `layer`, unit `restored` now kept and `removed` taken out — heads by their
/// original index, KV groups by their index (original head / group size), FFN blocks by their
/// position among the layer's blocks.
struct MaskSwap {
  SwapUnit unit = SwapUnit::kHead;
  int64_t layer = 0;
  int64_t removed = 0;   ///< the kept unit taken out
  int64_t restored = 0;  ///< the removed unit brought back (at gate 1)
  double loss_before = 0;
  double loss_after = 0;
};

/// What a rearrangement did.
struct RearrangeResult {
  bool enabled = false;
  std::size_t sequences = 0;
  int64_t evaluations = 0;  ///< losses computed (each a gated forward pass over the calibration text)
  double loss_before = 0;   ///< the trained mask's loss on the calibration text
  double loss_after = 0;
  double seconds = 0;
  std::vector<MaskSwap> swaps;
  nlohmann::json to_json() const;
  /// One line for logs: swaps made, loss before → after, evaluations, time.
  std::string describe() const;
};

/// Rearranges `gates`' keep-mask in place as the file comment describes, heads first and then,
/// with FFN gates, the layer's FFN blocks the same way (every layer keeps its FFN width): `student` is the model
/// the gates were trained on (its weights as trained), `dense` the dense reference (its outputs
/// are the targets); `sequences` token ids with special tokens. A restored head gets gate 1,
/// a removed one keeps its log_alpha and gate for the record. With grouped-query attention a
/// layer's wholly kept and wholly removed KV groups trade places first (ranked by their heads'
/// mean log_alpha), then single heads inside one KV group, so every layer keeps its number of
/// query heads and of KV groups, and any --gqa-mode mask stays valid. Logs each swap and
/// RearrangeResult::describe(); does nothing when not enabled.
/// @throws headprune::Error if there are no sequences, or the gates do not belong to `student`
///         (plan_from_gates).
RearrangeResult rearrange_mask(GateState& gates, models::Checkpoint& student, models::Checkpoint& dense,
                               const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id,
                               const RearrangeOptions& options);

}  // namespace headprune::pruner
