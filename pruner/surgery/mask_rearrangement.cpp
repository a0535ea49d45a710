#include "pruner/surgery/mask_rearrangement.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/log.h"
#include "pruner/objectives/distillation.h"
#include "pruner/surgery/surgery.h"
#include "pruner/text/corpus.h"

namespace headprune::pruner {
namespace {

/// The calibration batches and the dense model's targets on them, computed once.
struct Calibration {
  std::vector<models::ModelInputs> batches;
  std::vector<torch::Tensor> targets;  ///< distillation_target of the dense model, per batch
};

Calibration calibrate(models::AttentionModel& dense, const std::vector<std::vector<int64_t>>& sequences,
                      int64_t pad_id, const RearrangeOptions& o) {
  const auto n = std::min(sequences.size(), o.max_sequences);
  const std::vector<std::vector<int64_t>> used(sequences.begin(), sequences.begin() + static_cast<std::ptrdiff_t>(n));
  Calibration c;
  for (const auto& bucket : length_buckets(used, o.batch_size)) {
    c.batches.push_back(make_inputs(used, bucket, pad_id, o.device));
    c.targets.push_back(distillation_target(dense.forward(c.batches.back(), nullptr)));
  }
  return c;
}

/// Scores masks: the distillation loss of the student gated by a gate state's plan, averaged
/// over the calibration batches (weighted by their real tokens). The gates' owner is checked
/// once, by the caller (plan_from_gates), not per mask.
class MaskLoss {
 public:
  MaskLoss(models::Checkpoint& student, const Calibration& calibration, double embedding_weight, bool fold)
      : student_(student), calibration_(calibration), embedding_weight_(embedding_weight), fold_(fold) {}

  double operator()(const GateState& state) {
    ++evaluations;
    auto& model = *student_.model;
    const auto device = calibration_.batches.front().input_ids.device();
    const auto plan = plan_from_checked_gates(state, fold_);
    const auto heads = plan_multipliers(plan, model.config(), device);
    const auto ffn = plan_ffn_multipliers(plan, model.config(), device);
    const models::Multipliers multipliers{&heads, ffn.empty() ? nullptr : &ffn};
    double sum = 0, weight = 0;
    for (std::size_t b = 0; b < calibration_.batches.size(); ++b) {
      const auto& in = calibration_.batches[b];
      const auto loss = distillation(model.forward(in, multipliers), calibration_.targets[b], in.attention_mask,
                                     student_.pooling, embedding_weight_);
      const double tokens = in.attention_mask.sum().item<double>();
      sum += loss.total.item<double>() * tokens;
      weight += tokens;
    }
    return sum / weight;
  }

  int64_t evaluations = 0;

 private:
  models::Checkpoint& student_;
  const Calibration& calibration_;
  double embedding_weight_;
  bool fold_;
};

/// One layer's keep-mask, gate values and log_alpha for one kind: its heads (heads and KV
/// groups) or its FFN blocks (views into the state).
struct LayerMask {
  std::vector<bool>& keep;
  std::vector<double>& gate;
  const std::vector<double>& log_alpha;
};

LayerMask layer_mask(GateState& state, SwapUnit unit, std::size_t l) {
  if (unit == SwapUnit::kFfnBlock) return {state.ffn[l].keep, state.ffn[l].gate, state.ffn[l].log_alpha};
  return {state.layers[l].keep, state.layers[l].gate, state.layers[l].log_alpha};
}

/// What a swap can move in a layer: one head, one FFN block, or one KV group's heads.
struct Unit {
  std::vector<std::size_t> positions;  ///< in the layer's keep-mask
  int64_t id = 0;                      ///< head index, block position or KV group index
  int64_t group = 0;                   ///< a head's KV group (a head swap stays inside it); 0 otherwise
  double strength = 0;                 ///< mean log_alpha of its positions
};

/// Layer `l`'s units of kind `unit` (`group_size` query heads per KV head).
std::vector<Unit> layer_units(GateState& state, SwapUnit unit, std::size_t l, int64_t group_size) {
  const auto mask = layer_mask(state, unit, l);
  const auto& heads = state.layers[l].heads;
  std::vector<Unit> out;
  const auto unit_at = [&](std::size_t i) -> Unit& {
    if (unit != SwapUnit::kKvGroup) {
      const int64_t id = unit == SwapUnit::kHead ? heads[i] : static_cast<int64_t>(i);
      return out.emplace_back(Unit{{}, id, unit == SwapUnit::kHead && group_size > 1 ? id / group_size : 0, 0});
    }
    const int64_t g = heads[i] / group_size;
    const auto found = std::find_if(out.begin(), out.end(), [&](const Unit& u) { return u.id == g; });
    return found != out.end() ? *found : out.emplace_back(Unit{{}, g, g, 0});
  };
  for (std::size_t i = 0; i < mask.keep.size(); ++i) unit_at(i).positions.push_back(i);
  for (auto& u : out) {
    for (auto i : u.positions) u.strength += mask.log_alpha[i];
    u.strength /= static_cast<double>(u.positions.size());
  }
  return out;
}

/// The units wholly kept (`kept` true) or wholly removed, weakest kept / strongest removed first
/// by log_alpha, at most `count`.
std::vector<Unit> candidates(GateState& state, SwapUnit unit, std::size_t l, int64_t group_size, bool kept,
                             int64_t count) {
  const auto mask = layer_mask(state, unit, l);
  auto units = layer_units(state, unit, l, group_size);
  units.erase(std::remove_if(units.begin(), units.end(),
                             [&](const Unit& u) {
                               return !std::all_of(u.positions.begin(), u.positions.end(),
                                                   [&](std::size_t i) { return mask.keep[i] == kept; });
                             }),
              units.end());
  std::stable_sort(units.begin(), units.end(), [&](const Unit& a, const Unit& b) {
    return kept ? a.strength < b.strength : a.strength > b.strength;
  });
  if (static_cast<int64_t>(units.size()) > count) units.resize(static_cast<std::size_t>(count));
  return units;
}

/// `state` with units `out` and `in` of layer `l` trading places (`in` at gate 1).
GateState swapped(const GateState& state, SwapUnit unit, std::size_t l, const Unit& out, const Unit& in) {
  auto s = state;
  auto mask = layer_mask(s, unit, l);
  for (auto i : out.positions) mask.keep[i] = false;
  for (auto i : in.positions) {
    mask.keep[i] = true;
    mask.gate[i] = 1.0;
  }
  return s;
}

/// The best improving swap of layer `l`'s units of kind `unit`, if any, made in `state`: tries
/// candidates² swaps; heads under grouped-query attention (`group_size` query heads per KV
/// head, > 1) only inside a KV group, KV groups only of the same size. A later round may bring
/// back the unit an earlier one took out, at gate 1; when it trades it for the unit that round
/// restored, the mask is as trained with that unit at gate 1 instead of its gate value (a lower
/// loss, recorded as two swaps).
std::optional<MaskSwap> best_swap(GateState& state, SwapUnit unit, std::size_t l, double current, MaskLoss& loss,
                                  int64_t group_size, const RearrangeOptions& o) {
  std::optional<MaskSwap> best;
  std::optional<std::pair<Unit, Unit>> where;
  for (const auto& out : candidates(state, unit, l, group_size, true, o.candidates))
    for (const auto& in : candidates(state, unit, l, group_size, false, o.candidates)) {
      if (unit == SwapUnit::kHead && out.group != in.group) continue;
      if (out.positions.size() != in.positions.size()) continue;
      const double value = loss(swapped(state, unit, l, out, in));
      if (value >= (best ? best->loss_after : current)) continue;
      best = MaskSwap{unit, static_cast<int64_t>(l), out.id, in.id, current, value};
      where = {out, in};
    }
  if (best) state = swapped(state, unit, l, where->first, where->second);
  return best;
}

/// Up to max_rounds improving swaps of layer `l`'s units of kind `unit`, logged and recorded;
/// returns the loss after them.
double rearrange_layer(GateState& gates, SwapUnit unit, std::size_t l, double current, MaskLoss& loss,
                       int64_t group_size, const RearrangeOptions& o, RearrangeResult& result) {
  for (int64_t round = 0; round < o.max_rounds; ++round) {
    const auto swap = best_swap(gates, unit, l, current, loss, group_size, o);
    if (!swap) break;
    log::info("layer {}: {} {} kept instead of {} {}; loss {:.5f} -> {:.5f}", l, to_string(unit), swap->restored,
              to_string(unit), swap->removed, swap->loss_before, swap->loss_after);
    current = swap->loss_after;
    result.swaps.push_back(*swap);
  }
  return current;
}

}  // namespace

RearrangeResult rearrange_mask(GateState& gates, models::Checkpoint& student, models::Checkpoint& dense,
                               const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id,
                               const RearrangeOptions& options) {
  RearrangeResult result;
  result.enabled = options.enabled;
  if (!options.enabled) return result;
  if (sequences.empty()) throw Error("--rearrange needs calibration text, and none was given");
  plan_from_gates(gates, *student.model, options.fold_gates);  // the gates belong to `student`, or Error
  const auto t0 = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  const auto calibration = calibrate(*dense.model, sequences, pad_id, options);
  result.sequences = std::min(sequences.size(), options.max_sequences);
  MaskLoss loss(student, calibration, gates.settings.value("embedding_weight", 1.0), options.fold_gates);
  const auto group_size = student.model->config().kv_group_size();
  log::info("rearranging the mask: per layer up to {} x {} swaps of kept and removed {}heads{}, scored on {} "
            "calibration sequences",
            options.candidates, options.candidates, group_size > 1 ? "KV groups, " : "",
            gates.ffn.empty() ? "" : " and FFN blocks", result.sequences);
  double current = result.loss_before = loss(gates);
  for (std::size_t l = 0; l < gates.layers.size(); ++l) {
    if (group_size > 1)  // whole KV groups first: under --gqa-mode groups no head swap stays inside one
      current = rearrange_layer(gates, SwapUnit::kKvGroup, l, current, loss, group_size, options, result);
    current = rearrange_layer(gates, SwapUnit::kHead, l, current, loss, group_size, options, result);
    if (l < gates.ffn.size())
      current = rearrange_layer(gates, SwapUnit::kFfnBlock, l, current, loss, group_size, options, result);
  }
  result.loss_after = current;
  result.evaluations = loss.evaluations;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gates.summary["rearranged"] = result.to_json();
  log::info("{}", result.describe());
  return result;
}

nlohmann::json RearrangeResult::to_json() const {
  auto swaps_json = nlohmann::json::array();
  for (const auto& s : swaps)
    swaps_json.push_back({{"unit", to_string(s.unit)}, {"layer", s.layer}, {"removed", s.removed}, {"restored", s.restored},
                          {"loss_before", s.loss_before}, {"loss_after", s.loss_after}});
  return {{"sequences", sequences}, {"evaluations", evaluations}, {"loss_before", loss_before},
          {"loss_after", loss_after}, {"seconds", seconds}, {"swaps", swaps_json}};
}

std::string RearrangeResult::describe() const {
  return fmt::format("mask rearrangement on {} sequences: {} swap(s), distillation loss {:.5f} -> {:.5f} ({} "
                     "evaluations, {:.1f} s)",
                     sequences, swaps.size(), loss_before, loss_after, evaluations, seconds);
}

const char* to_string(SwapUnit unit) {
  switch (unit) {
    case SwapUnit::kHead: return "head";
    case SwapUnit::kKvGroup: return "kv_group";
    case SwapUnit::kFfnBlock: return "ffn_block";
  }
  return "?";
}

}  // namespace headprune::pruner
