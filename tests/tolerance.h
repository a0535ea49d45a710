// Tolerances for comparing float32 network outputs, derived from the quantity's scale and the
// length of the sums behind it, never from one machine's result.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <torch/types.h>

#include "models/config.h"

namespace headprune::testing {

/// Unit roundoff of IEEE float32 (2^-24).
inline constexpr double kFloat32UnitRoundoff = 5.9604644775390625e-8;

/// Largest difference two float32 evaluations of the same network may show when they differ
/// only in summation order (BLAS kernels and their blocking, a sliced weight matrix, a gate
/// folded into a projection, another CPU's SIMD width).
///
/// A dot product of length K evaluated in float32 in any order has an error of at most
/// γ_K·Σ|x_i·y_i| with γ_K = K·u/(1−K·u) ≈ K·u (Higham, *Accuracy and Stability of Numerical
/// Algorithms*, 2nd ed., eq. 3.5). Taking Σ|x_i·y_i| ≈ `scale` (the largest |value| of the
/// compared quantity), allowing each of `depth` stacked layers to add its own error, and two
/// evaluations that each err:
///   tolerance = 2 · depth · accumulation_length · u · scale.
/// `accumulation_length`: the longest inner dimension of the layer's matrix products (the FFN
/// width for a transformer block). Dimensionless counts; `scale` in the units of the quantity.
inline double float32_tolerance(double scale, int64_t depth, int64_t accumulation_length) {
  return 2.0 * static_cast<double>(depth) * static_cast<double>(accumulation_length) *
         kFloat32UnitRoundoff * std::max(scale, 1.0);
}

/// The same, with `scale` read off a reference tensor (its largest |value|).
inline double float32_tolerance(const torch::Tensor& reference, int64_t depth,
                                int64_t accumulation_length) {
  return float32_tolerance(reference.abs().max().item<double>(), depth, accumulation_length);
}

/// The bound for a whole transformer described by `config`: depth = its layers, accumulation
/// length = the longer of its width and its FFN width.
inline double float32_tolerance(const models::ModelConfig& config, const torch::Tensor& reference) {
  return float32_tolerance(reference, config.num_hidden_layers,
                           std::max(config.hidden_size, config.intermediate_size));
}

}  // namespace headprune::testing
