// The one place attention probabilities meet values: the explicit reference path, or LibTorch's
// fused scaled_dot_product_attention where the LibTorch has it (2.0 and later).
#pragma once

#include <torch/types.h>

namespace headprune::models {

/// Scaled dot-product attention, softmax(q kᵀ / √d + mask_bias) v (Vaswani et al. 2017, eq. 1),
/// for every head at once.
///   q, k, v:   [B, h, T, d], one key/value head per query head (GQA groups already expanded);
///   mask_bias: additive, broadcastable to [B, h, T, T]: 0 where a key is visible, the lowest
///              float where it is not (HF's extended mask; a row with nothing visible stays
///              finite and attends uniformly); undefined when every key is visible (an
///              unpadded BERT batch), so the fused kernel runs without a mask, as HF's does.
/// @returns the context [B, h, T, d], in q's dtype; the softmax runs in float32.
/// With `probs` non-null the explicit path runs and *probs receives the probabilities
/// [B, h, T, T] (detached); otherwise LibTorch >= 2.0 runs at::scaled_dot_product_attention
/// (fused kernels that never materialise the scores), LibTorch 1.13 the explicit path.
/// The two agree to float32 rounding (tests/attention_kernel_test.cpp).
torch::Tensor attention_context(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& mask_bias, torch::Tensor* probs = nullptr);

/// attention_context's explicit path, always (the reference the fused path is tested against).
torch::Tensor attention_context_explicit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                         const torch::Tensor& mask_bias, torch::Tensor* probs = nullptr);

/// The additive bias that hides a key in a model running in `dtype`: the lowest finite value of
/// that dtype (HF's torch.finfo(dtype).min). float32's lowest would round to -inf in bfloat16 and
/// turn 0 × bias and fully masked rows into NaN.
double mask_min(torch::ScalarType dtype);

/// Whether attention_context runs a fused kernel when no probabilities are asked for
/// (this build's LibTorch is 2.0 or later).
bool fused_attention_available();

}  // namespace headprune::models
