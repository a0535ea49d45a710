// The chunked KL (pruner/objectives/chunked_kl.h, issue 37 item 2): the same loss and gradients
// as the whole-batch KL through the model's logits, and the same gates after training.
//
// Tolerances. Both float32 evaluations are compared with a float64 reference. A logit is a dot
// product of length H, off by at most δz = γ_H · max_v Σ_i |h_i w_vi| (Higham eq. 3.5, γ_K ≈ K·u);
// log-softmax moves by at most 2δz (z − logsumexp z), in the student's and the teacher's, and
// the per-token sum over the vocabulary adds γ_V · Σ_v |p_t (log p_t − log p_s)|. Per token:
// 4δz + γ_V · Σ_v |term|, summed over the tokens. The gradient row (p_s − p_t) W: each p moves
// by at most p · 2δz (relative), and the product of length V adds γ_V Σ_v |dz_v w_vi|.
#include <cmath>

#include <torch/torch.h>

#include "gates/hard_concrete.h"
#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/jobs/training_bench.h"
#include "pruner/objectives/chunked_kl.h"
#include "pruner/objectives/distillation.h"
#include "pruner/text/corpus.h"
#include "pruner/training/gate_training.h"
#include "tests/stories_support.h"
#include "tests/stories_training.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace chunked_kl_test {

double accumulation_gamma(int64_t k) { return static_cast<double>(k) * testing::kFloat32UnitRoundoff; }

/// Random hidden states [n, h] and an LM head [v, h] scaled so that logits spread over a few nats.
struct Problem {
  torch::Tensor hs, ht, w;
  explicit Problem(int64_t n, int64_t h, int64_t v) {
    torch::manual_seed(11);
    hs = torch::randn({n, h});
    ht = hs + 0.3 * torch::randn({n, h});
    w = torch::randn({v, h}) / std::sqrt(static_cast<double>(h)) * 2;
  }
  /// The whole-batch KL (what causal_lm_distillation computes per token), summed, in `dtype`.
  torch::Tensor whole(const torch::Tensor& student_hidden, torch::Dtype dtype) const {
    const auto lt = torch::log_softmax(torch::matmul(ht.to(dtype), w.to(dtype).t()), -1);
    const auto ls = torch::log_softmax(torch::matmul(student_hidden.to(dtype), w.to(dtype).t()), -1);
    return pruner::token_kl(lt, ls).sum();
  }
  /// δz of the header, for the float32 logits.
  double logit_error() const {
    return accumulation_gamma(hs.size(1)) * torch::matmul(torch::max(hs.abs(), ht.abs()), w.abs().t()).max().item<double>();
  }
};

}  // namespace chunked_kl_test

using chunked_kl_test::accumulation_gamma;
using chunked_kl_test::Problem;

CATCH_TEST_CASE("chunked KL: loss and gradients equal the whole-batch KL's within float32 rounding", "[chunked_kl]") {
  const Problem p(37, 16, 1000);  // 37 tokens: chunks of 5 leave a remainder
  const auto dz = p.logit_error();
  // The float64 reference, its gradients by autograd.
  auto hs64 = p.hs.to(torch::kDouble).requires_grad_(true);
  auto w64 = p.w.to(torch::kDouble).requires_grad_(true);
  const auto lt64 = torch::log_softmax(torch::matmul(p.ht.to(torch::kDouble), w64.detach().t()), -1);
  const auto ls64 = torch::log_softmax(torch::matmul(hs64, w64.t()), -1);
  const auto terms = lt64.exp() * (lt64 - ls64);
  const auto ref = terms.sum();
  ref.backward();
  const double loss_tol = 4 * dz * p.hs.size(0) + accumulation_gamma(p.w.size(0)) * terms.abs().sum().item<double>();
  CATCH_CHECK(std::abs(p.whole(p.hs, torch::kFloat).item<double>() - ref.item<double>()) <= loss_tol);

  for (int64_t chunk : {1, 5, 37, 64}) {
    CATCH_INFO("chunk " << chunk);
    auto hs = p.hs.clone().requires_grad_(true);
    auto w = p.w.clone().requires_grad_(true);
    const auto kl = pruner::chunked_token_kl_sum(hs, p.ht, {w, p.w, chunk});
    CATCH_CHECK(kl.scalar_type() == torch::kFloat);
    CATCH_CHECK(std::abs(kl.item<double>() - ref.item<double>()) <= loss_tol);
    kl.backward();
    // Gradient bounds, per element (header).
    const auto ps = ls64.exp().detach(), pt = lt64.exp();
    const auto moved = (ps + pt) * 2 * dz;  // |δ(p_s − p_t)| per vocabulary entry
    const auto grad_dz = (ps - pt).abs();
    const auto hs_tol = torch::matmul(moved + accumulation_gamma(p.w.size(0)) * grad_dz, p.w.abs().to(torch::kDouble));
    const auto w_tol = torch::matmul((moved + accumulation_gamma(p.hs.size(0)) * grad_dz).t(), p.hs.abs().to(torch::kDouble));
    CATCH_CHECK(((hs.grad().to(torch::kDouble) - hs64.grad()).abs() <= hs_tol).all().item<bool>());
    CATCH_CHECK(((w.grad().to(torch::kDouble) - w64.grad()).abs() <= w_tol).all().item<bool>());
  }
  // A frozen LM head gets no gradient and costs none.
  auto hs = p.hs.clone().requires_grad_(true);
  pruner::chunked_token_kl_sum(hs, p.ht, {p.w, p.w, 8}).backward();
  CATCH_CHECK(hs.grad().defined());
  CATCH_CHECK(!p.w.grad().defined());
}

CATCH_TEST_CASE("chunked KL: shapes and chunk sizes are checked, and automatic chunks follow the logits' size",
                "[chunked_kl]") {
  const Problem p(4, 8, 50);
  CATCH_CHECK_THROWS_AS(pruner::chunked_token_kl_sum(p.hs, p.ht, {p.w, p.w, 0}), Error);
  CATCH_CHECK_THROWS_AS(pruner::chunked_token_kl_sum(p.hs, p.ht.slice(0, 0, 3), {p.w, p.w, 2}), Error);
  CATCH_CHECK_THROWS_AS(pruner::chunked_token_kl_sum(p.hs, p.ht, {p.w.slice(1, 0, 7), p.w, 2}), Error);
  // SmolLM2 (49,152 tokens) at 32 x 128: 768 MiB of logits, whole; Llama 3.2 (128,256) at 8 x 512:
  // 2,004 MiB, chunked by 130 tokens (64 MiB).
  // An encoder has no vocabulary to chunk: asking for chunks is refused, the default passes.
  const auto tiny = testing::tiny_checkpoint();
  CATCH_CHECK_THROWS_WITH(pruner::chunked_lm_head(*tiny.model, *tiny.model, 64, 16),
                          Catch::Contains("has no language-model head"));
  CATCH_CHECK(!pruner::chunked_lm_head(*tiny.model, *tiny.model, 64, 0).has_value());
  CATCH_CHECK(pruner::automatic_kl_chunk_tokens(32 * 128, 49152) == 0);
  CATCH_CHECK(pruner::automatic_kl_chunk_tokens(8 * 512, 128256) == 130);
}

CATCH_TEST_CASE("stories260K: gates trained with the chunked KL equal the whole-batch KL's after 20 steps",
                "[chunked_kl][llama]") {
  const auto dir = testing::converted_stories();
  auto train = [&](int64_t chunk) {
    return testing::train_stories_20_steps(dir, [chunk](pruner::GateTrainingOptions& o) {
      o.teacher_cache_mib = 0;
      o.kl_chunk_tokens = chunk;
    });
  };
  const auto whole = train(-1), chunked = train(7);
  // Bound: the loss's gradient differs by a relative γ_{V+H} (the header's per-token terms, V =
  // 512, H = 64) from rounding alone; AdamW's step lr · m̂ / √v̂ is scale-free, so each of the 20
  // steps moves a log_alpha by at most lr · 2 · γ_{V+H} differently (m̂ and √v̂ each), and the
  // gates' feedback on the next gradient is bounded by the same relative change: at most
  // 20 · lr · 4 · γ_{V+H} apart.
  const double tol = 20 * 0.1 * 4 * accumulation_gamma(512 + 64);
  const double worst = testing::largest_log_alpha_difference(whole, chunked);
  CATCH_INFO("largest log_alpha difference " << worst << ", bound " << tol);
  CATCH_CHECK(worst <= tol);
  CATCH_CHECK(testing::largest_log_alpha_move(whole) > 100 * tol);
}

CATCH_TEST_CASE("bench-training runs the gate steps with the chunked KL train-gates would use, and splits memory",
                "[chunked_kl][bench]") {
  auto ckpt = models::load_checkpoint(testing::fixture_path("llama3"), torch::kCPU);
  pruner::TrainingBenchOptions o;
  o.batch = 2;
  o.seq = 32;
  o.reps = 1;
  o.warmup = 0;
  o.kl_chunk_tokens = 16;
  o.memory = true;
  const auto r = pruner::run_training_bench(ckpt, o);
  CATCH_CHECK(r.kl_chunk_tokens == 16);
  CATCH_CHECK(r.to_json()["kl_chunk_tokens"] == 16);
  CATCH_REQUIRE(r.memory.has_value());
  // Weights: 135,616 float32 parameters (the fixture) and no buffers; the gate optimiser holds
  // AdamW's two moments of the 12 heads' log_alpha.
  CATCH_CHECK(r.memory->weights == 135616 * 4);
  CATCH_CHECK(r.memory->optimiser == 2 * 12 * 4);
  CATCH_CHECK(r.memory->resting > r.memory->weights);
  CATCH_CHECK(r.to_json()["memory"]["step_peak_above_resting_bytes"].size() == 3);
  // -1 asks for the whole-batch path, which the automatic choice also takes at this size.
  o.kl_chunk_tokens = -1;
  o.memory = false;
  CATCH_CHECK(pruner::run_training_bench(ckpt, o).kl_chunk_tokens == 0);
  o.kl_chunk_tokens = 0;
  CATCH_CHECK(pruner::run_training_bench(ckpt, o).kl_chunk_tokens == 0);
}
