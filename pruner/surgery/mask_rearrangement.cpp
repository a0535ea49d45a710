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

/// One layer's units of one kind in a gate state: its heads' or its FFN blocks' keep-mask, gate
/// values and log_alpha (views into the state).
struct LayerUnits {
  std::vector<bool>& keep;
  std::vector<double>& gate;
  const std::vector<double>& log_alpha;
};

LayerUnits layer_units(GateState& state, SwapUnit unit, std::size_t l) {
  if (unit == SwapUnit::kHead) return {state.layers[l].keep, state.layers[l].gate, state.layers[l].log_alpha};
  return {state.ffn[l].keep, state.ffn[l].gate, state.ffn[l].log_alpha};
}

/// Positions of the kept (`kept` true) or removed units, weakest kept / strongest removed first
/// by log_alpha, at most `count`.
std::vector<std::size_t> candidates(const LayerUnits& units, bool kept, int64_t count) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < units.keep.size(); ++i)
    if (units.keep[i] == kept) out.push_back(i);
  std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return kept ? units.log_alpha[a] < units.log_alpha[b] : units.log_alpha[a] > units.log_alpha[b];
  });
  if (static_cast<int64_t>(out.size()) > count) out.resize(static_cast<std::size_t>(count));
  return out;
}

/// `state` with units `out` and `in` of layer `l` trading places (`in` at gate 1).
GateState swapped(const GateState& state, SwapUnit unit, std::size_t l, std::size_t out, std::size_t in) {
  auto s = state;
  auto units = layer_units(s, unit, l);
  units.keep[out] = false;
  units.keep[in] = true;
  units.gate[in] = 1.0;
  return s;
}

/// The swap's record: original head indices for heads, block positions for FFN blocks.
MaskSwap swap_record(const GateState& state, SwapUnit unit, std::size_t l, std::size_t out, std::size_t in) {
  MaskSwap swap;
  swap.unit = unit;
  swap.layer = static_cast<int64_t>(l);
  const auto& heads = state.layers[l].heads;
  swap.removed = unit == SwapUnit::kHead ? heads[out] : static_cast<int64_t>(out);
  swap.restored = unit == SwapUnit::kHead ? heads[in] : static_cast<int64_t>(in);
  return swap;
}

/// The best improving swap of layer `l`'s units of kind `unit`, if any, made in `state`: tries
/// candidates² swaps; heads under grouped-query attention (`group_size` query heads per KV
/// head, > 1) only inside a KV group.
std::optional<MaskSwap> best_swap(GateState& state, SwapUnit unit, std::size_t l, double current, MaskLoss& loss,
                                  int64_t group_size, const RearrangeOptions& o) {
  const auto units = layer_units(state, unit, l);
  const auto& heads = state.layers[l].heads;
  std::optional<MaskSwap> best;
  std::pair<std::size_t, std::size_t> where;
  for (auto out : candidates(units, true, o.candidates))
    for (auto in : candidates(units, false, o.candidates)) {
      if (unit == SwapUnit::kHead && group_size > 1 && heads[out] / group_size != heads[in] / group_size) continue;
      const double value = loss(swapped(state, unit, l, out, in));
      if (value >= (best ? best->loss_after : current)) continue;
      best = swap_record(state, unit, l, out, in);
      best->loss_before = current;
      best->loss_after = value;
      where = {out, in};
    }
  if (best) state = swapped(state, unit, l, where.first, where.second);
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
  log::info("rearranging the mask: per layer up to {} x {} swaps of kept and removed heads{}, scored on {} "
            "calibration sequences",
            options.candidates, options.candidates, gates.ffn.empty() ? "" : " and of FFN blocks", result.sequences);
  double current = result.loss_before = loss(gates);
  for (std::size_t l = 0; l < gates.layers.size(); ++l) {
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

const char* to_string(SwapUnit unit) { return unit == SwapUnit::kHead ? "head" : "ffn_block"; }

}  // namespace headprune::pruner
