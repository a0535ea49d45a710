// Hard-concrete L0 gates, one per attention head.
//
// Louizos, Welling & Kingma 2018, "Learning Sparse Neural Networks through L0 Regularization",
// as used for heads by Voita et al. 2019 and for structured pruning by CoFi (Xia et al. 2022).
// With stretch limits γ < 0 < 1 < ζ, temperature β and u ~ U(ε, 1−ε):
//   training sample (Louizos eq. 10)   s = σ((ln u − ln(1−u) + log α) / β)
//                                       z = min(1, max(0, s·(ζ−γ) + γ))
//   P(z ≠ 0)        (Louizos eq. 12)   σ(log α − β·ln(−γ/ζ))        ; expected_l0 = Σ P(z ≠ 0)
//   test time       (Louizos eq. 13)   ẑ = min(1, max(0, σ(log α)·(ζ−γ) + γ))
//   test time, CoFi rule               zero the round(N − E[L0]) heads with the lowest log α;
//                                       the others keep ẑ.
// No model code here: the gates produce per-head multipliers, models consume them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace headprune::gates {

/// Constants and initialisation of the gates.
struct HardConcreteOptions {
  double gamma = -0.1;   ///< lower stretch limit γ (Louizos)
  double zeta = 1.1;     ///< upper stretch limit ζ
  double beta = 2.0 / 3.0;  ///< temperature β (Louizos, CoFi; Voita et al. used 0.33)
  double eps = 1e-6;     ///< u is drawn from U(ε, 1−ε)
  /// Initial log α for every head. The default 3.0 gives P(z≠0) ≈ 1.0 and a deterministic
  /// gate of 1: gates start almost fully open, so training begins at the dense model.
  double log_alpha_init = 3.0;
};

/// The two deterministic (test-time) rules in use in the field.
enum class DeterministicRule {
  kLouizos,  ///< ẑ = clip(σ(log α)(ζ−γ)+γ, 0, 1)   (Louizos eq. 13; Voita et al.)
  kCoFi,     ///< zero the round(N − E[L0]) lowest-log α heads, others ẑ  (Xia et al. 2022)
};
/// "louizos" / "cofi". @throws headprune::UsageError otherwise.
DeterministicRule parse_rule(const std::string& name);
std::string to_string(DeterministicRule rule);

/// One gate per head over all layers (layers may hold different numbers of heads).
/// Parameter: `log_alpha`, shape [total heads], layer-major (layer 0's heads first).
class HardConcreteGates : public torch::nn::Module {
 public:
  /// @throws headprune::Error if a count is negative, β <= 0 or not γ < 0 < 1 < ζ.
  HardConcreteGates(std::vector<int64_t> heads_per_layer, HardConcreteOptions options = {});

  /// One training draw z ∈ [0,1]^N (differentiable w.r.t. log_alpha); shape [total heads].
  torch::Tensor sample() const;
  /// P(z_i ≠ 0) for every head, shape [total heads] (differentiable).
  torch::Tensor prob_nonzero() const;
  /// Σ P(z_i ≠ 0): the expected number of open gates (a 0-dim tensor, differentiable).
  torch::Tensor expected_l0() const;
  /// Deterministic gate values ẑ in [0,1], shape [total heads] (no gradient).
  torch::Tensor deterministic(DeterministicRule rule) const;

  /// Splits a [total heads] tensor into per-layer tensors (views) — the models' multipliers.
  std::vector<torch::Tensor> split(const torch::Tensor& per_head) const;

  const std::vector<int64_t>& heads_per_layer() const { return heads_per_layer_; }
  int64_t total_heads() const { return total_; }
  const HardConcreteOptions& options() const { return options_; }

  torch::Tensor log_alpha;  ///< [total heads]

 private:
  std::vector<int64_t> heads_per_layer_;
  int64_t total_ = 0;
  HardConcreteOptions options_;
};

/// Nested gates (CoFi's sublayer gates over the head and FFN-block gates, Xia et al. 2022 §3.1:
/// a head's effective mask is z_head · z_MHA): per unit i < parent.size(), values[i] ·
/// values[parent[i]], or values[i] where parent[i] < 0. values: [units and parents], parents
/// after the units; @returns [parent.size()] (differentiable). Used on samples, on P(z ≠ 0) (the
/// gates are independent, so the product's probability of being non-zero is the product) and on
/// deterministic values. @throws headprune::Error for a parent index outside values.
torch::Tensor through_parents(const torch::Tensor& values, const std::vector<int64_t>& parent);

/// The log α of a single gate whose P(z ≠ 0) is `p` (the inverse of prob_nonzero, p clamped to
/// [1e-12, 1 − 1e-12]): how a nested unit's effective gate is ranked and recorded.
torch::Tensor log_alpha_of_probability(const torch::Tensor& p, const HardConcreteOptions& options);

}  // namespace headprune::gates
