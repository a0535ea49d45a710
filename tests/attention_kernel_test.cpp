// The fused attention path (LibTorch >= 2.0: at::scaled_dot_product_attention) against the
// explicit reference path, with the masks the model families build. On LibTorch 1.13 both calls
// run the explicit path, and the test checks that no fused path is claimed.
#include <limits>

#include <torch/torch.h>
#include <torch/version.h>

#include "models/attention_kernel.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace {

constexpr int64_t kBatch = 3, kHeads = 5, kTokens = 37, kHeadWidth = 16;

/// HF's additive mask: 0 where visible, the lowest float elsewhere; [B, 1, T, T].
torch::Tensor mask_bias(const torch::Tensor& allowed) {
  return torch::zeros(allowed.sizes()).masked_fill(allowed.logical_not(), std::numeric_limits<float>::lowest());
}

/// Keys visible per sequence: padding at the end of sequences 1 and 2 (BERT's padding mask).
torch::Tensor padding_allowed() {
  auto keep = torch::ones({kBatch, 1, 1, kTokens}, torch::kBool);
  keep.index_put_({1, 0, 0, torch::indexing::Slice(30)}, false);
  keep.index_put_({2, 0, 0, torch::indexing::Slice(5)}, false);
  return keep.expand({kBatch, 1, kTokens, kTokens});
}

/// Causal and padded (LLaMA's mask): sequence 2's first rows see nothing but stay finite.
torch::Tensor causal_allowed() {
  auto causal = torch::ones({kTokens, kTokens}, torch::kBool).tril().view({1, 1, kTokens, kTokens});
  auto keep = torch::ones({kBatch, 1, 1, kTokens}, torch::kBool);
  keep.index_put_({2, 0, 0, torch::indexing::Slice(0, 4)}, false);  // left padding
  return causal.logical_and(keep);
}

void check_agrees(const torch::Tensor& allowed) {
  torch::manual_seed(7);
  auto q = torch::randn({kBatch, kHeads, kTokens, kHeadWidth}) * 2;
  auto k = torch::randn({kBatch, kHeads, kTokens, kHeadWidth});
  auto v = torch::randn({kBatch, kHeads, kTokens, kHeadWidth});
  const auto bias = mask_bias(allowed);
  torch::Tensor probs;
  const auto reference = models::attention_context_explicit(q, k, v, bias, &probs);
  const auto fused = models::attention_context(q, k, v, bias);
  CATCH_REQUIRE(fused.sizes() == reference.sizes());
  // Two float32 stages (scores: sums of head_dim terms; context: sums of T terms).
  const double tol = testing::float32_tolerance(reference, 2, std::max(kHeadWidth, kTokens));
  CATCH_CHECK((fused - reference).abs().max().item<double>() <= tol);
  // The masks matter far beyond that tolerance: without them the answer is another one.
  CATCH_CHECK((models::attention_context(q, k, v, torch::zeros_like(bias)) - reference).abs().max().item<double>() >
              100 * tol);
  // Asking for probabilities gives the explicit path's, rows summing to 1.
  torch::Tensor again;
  models::attention_context(q, k, v, bias, &again);
  CATCH_CHECK(torch::equal(again, probs));
  CATCH_CHECK((probs.sum(-1) - 1).abs().max().item<double>() < 1e-5);
}

}  // namespace

CATCH_TEST_CASE("fused attention agrees with the explicit path under BERT's padding mask", "[attention]") {
  check_agrees(padding_allowed());
}

CATCH_TEST_CASE("fused attention agrees with the explicit path under LLaMA's causal mask with padding",
                "[attention]") {
  check_agrees(causal_allowed());
}

CATCH_TEST_CASE("the fused path is claimed exactly when the LibTorch has one", "[attention]") {
  CATCH_CHECK(models::fused_attention_available() == (TORCH_VERSION_MAJOR >= 2));
}

CATCH_TEST_CASE("no mask (an unpadded batch) equals an all-visible mask on both paths", "[attention]") {
  torch::manual_seed(11);
  auto q = torch::randn({kBatch, kHeads, kTokens, kHeadWidth}) * 2;
  auto k = torch::randn({kBatch, kHeads, kTokens, kHeadWidth});
  auto v = torch::randn({kBatch, kHeads, kTokens, kHeadWidth});
  const auto zeros = torch::zeros({kBatch, 1, 1, kTokens});
  const auto reference = models::attention_context_explicit(q, k, v, zeros);
  const double tol = testing::float32_tolerance(reference, 2, std::max(kHeadWidth, kTokens));
  CATCH_CHECK((models::attention_context_explicit(q, k, v, torch::Tensor()) - reference).abs().max().item<double>() <=
              tol);
  CATCH_CHECK((models::attention_context(q, k, v, torch::Tensor()) - reference).abs().max().item<double>() <= tol);
}
