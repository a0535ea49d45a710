// Sparsity control for the gates: a fixed L0 penalty (Voita et al. 2019) or a Lagrangian that
// drives the expected sparsity to a target (Wang, Wohlwend & Lei 2020, "Structured Pruning of
// Large Language Models", eq. 5; Xia, Zhong & Chen 2022, CoFi, eq. 6).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "gates/hard_concrete.h"

namespace headprune::gates {

/// What "sparsity" counts. Each head has a cost; sparsity = removed cost / total cost.
enum class SparsityUnit {
  kHeads,             ///< every head costs 1; total = all heads
  kAttentionParams,   ///< a head costs its Q/K/V/O parameters; total = all attention parameters
  kFlops,             ///< a head costs its forward FLOPs; total = the whole model's FLOPs
  kLatency,           ///< a layer costs its measured latency at its head count (a table per
                      ///< layer, pruner/measure/latency_table.h); total = the whole model's
  kKvCache,           ///< a decoder's KV cache per token: a KV group costs 2·head_dim, shared
                      ///< by its query heads; total = the whole cache (models/kv_cache.h). Only
                      ///< whole groups free it, so it is trained with GroupRule::kWholeGroups
};
/// "heads" / "attention-params" / "flops" / "kv-cache" (kLatency is set by --target-latency only).
/// @throws headprune::UsageError otherwise.
SparsityUnit parse_unit(const std::string& name);
std::string to_string(SparsityUnit unit);

/// Per-head costs and their denominator for one model (see SparsityUnit).
///
/// Costs are per head (linear in the heads kept) unless `layer_cost` is set: then a layer with
/// k heads kept costs layer_cost[l][k], the removed cost of a mask is
/// Σ_l layer_cost[l][heads present] − layer_cost[l][kept], and head_cost (each layer's mean cost
/// per head) serves only to order removal units. Kwon et al. 2022 ("A Fast Post-Training Pruning
/// Framework for Transformers", §4.1) keep such a per-layer latency lookup table, since latency
/// is not linear in the head count.
struct SparsityMeasure {
  std::vector<double> head_cost;  ///< [total heads], layer-major
  double total_cost = 1;          ///< denominator; >= sum(head_cost)
  SparsityUnit unit = SparsityUnit::kHeads;
  /// Optional: [layers][k = 0 .. heads present] the layer's cost with k heads kept (non-decreasing in k).
  std::vector<std::vector<double>> layer_cost;
  /// Optional, [total heads] like head_cost: the index of each unit's parent gate among the
  /// gates (after the units), or −1. The parents cost nothing themselves; a unit is alive when it
  /// and its parent are (through_parents). Empty: no nesting.
  std::vector<int64_t> parent;

  /// P(unit i is kept) over the units [total heads]: P(z_i ≠ 0), times its parent's (differentiable).
  torch::Tensor alive(const HardConcreteGates& gates) const;

  /// With layer_cost: the removed cost of a mask that keeps kept_per_layer[l] heads in layer l.
  /// @throws headprune::Error if the layer count differs or a count is outside its table.
  double removed_cost(const std::vector<int64_t>& kept_per_layer) const;

  /// Expected sparsity ŝ = Σ c_i (1 − P(z_i ≠ 0)) / total (differentiable; 0-dim; with
  /// `parent`, P(z_i ≠ 0) · P(z_parent ≠ 0): CoFi's expected size of nested masks, eq. 5). With
  /// layer_cost: Σ_l (layer_cost[l][n_l] − c_l(E[kept_l])) / total, c_l interpolated linearly
  /// between the table's integer counts at the expected count E[kept_l] = Σ_{i∈l} P(z_i ≠ 0).
  torch::Tensor expected(const HardConcreteGates& gates) const;
  /// Sparsity of a hard keep-mask: Σ_{removed} c_i / total.
  double of_mask(const std::vector<bool>& keep) const;
  /// The largest sparsity reachable by removing every head.
  double max_reachable() const;
};

/// λ1, λ2 of the Lagrangian relaxation, both starting at 0. With the gap g = ŝ − t, the penalty
///   λ1 g + (λ2 + κ |λ1|) g²
/// is minimised by the gates and *maximised* by λ1, λ2 (gradient ascent; the gradients of λ1 and
/// λ2 are g and g²). κ |λ1| (`damping` κ, |λ1| held constant in the gradient) is a damping term
/// in the sense of Platt & Barr's modified differential method of multipliers (NeurIPS 1988,
/// "Constrained Differential Optimization": a penalty c g² / 2 added to the Lagrangian, here
/// c = 2κ|λ1|): the multiplier the gates feel is λ1 (1 + 2κ g sign(λ1)) + 2 λ2 g, so the
/// pressure λ1 has built up while the gates lagged behind the target vanishes once they pass it
/// by 1 / (2κ), instead of pushing on until λ1 has been integrated back down. Scaling c with |λ1|
/// keeps κ free of the loss's units (λ1 carries them). κ = 0 is CoFi's penalty (eq. 6). The
/// fixed point (g = 0) is the same for every κ.
class Lagrangian : public torch::nn::Module {
 public:
  /// @param damping κ >= 0. @throws headprune::Error for a negative or non-finite κ.
  explicit Lagrangian(double damping = 0);
  /// @param expected_sparsity ŝ (0-dim, differentiable). @returns the 0-dim penalty.
  torch::Tensor penalty(const torch::Tensor& expected_sparsity, double target) const;
  /// Negates the multipliers' gradients so that a descent optimiser's step ascends.
  /// Call after backward() and before step().
  void flip_gradients();
  torch::Tensor lambda_1, lambda_2;
  double damping = 0;  ///< κ
};

/// Linear warm-up of the target (CoFi, Sheared-LLaMA): target·min(1, step / warmup_steps).
double ramped_target(double target, int64_t step, int64_t warmup_steps);

/// Voita et al. 2019 eq. 5: λ · Σ_h P(z_h ≠ 0) (0-dim, differentiable).
torch::Tensor fixed_l0_penalty(const HardConcreteGates& gates, double lambda);

}  // namespace headprune::gates
