// The teacher's top-k target (pruner/objectives/top_k_target.h, issue 37 item 2): the KL over the
// top-k tokens and a rest bucket is the KL of the merged outcomes, equals the whole KL when the
// bucket holds one token, is at most the whole KL, has the gradient top_k_gradient_target
// describes, and the chunked path computes the same loss and gradients as the whole batch.
//
// Tolerances (u = 2^-24, γ_K = K·u, Higham eq. 3.5). A float32 log-softmax over V logits of at
// most |z| in magnitude is off by δ = 2 · γ_V · max(1, max|z|) (the shift by the maximum, and the
// sum of V exponentials inside the log); a log-probability from a logit made by a dot product of
// length H adds 2δz (chunked_kl_test's header). A per-token KL over k + 1 outcomes then errs by
// at most 2δ (each of its weights sums to 1: Σ p_t = 1 over the outcomes, both sides' log
// probabilities move by δ) plus γ_{k+1} Σ|terms| for its own sum. Gradients p_s − q move by
// (p_s + q) · 2 · (2δ) per entry (q's tail is p_s scaled by r_t / r_s, both of which move).
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/objectives/chunked_kl.h"
#include "pruner/objectives/distillation.h"
#include "pruner/objectives/top_k_target.h"
#include "pruner/training/gate_training.h"
#include "tests/stories_support.h"
#include "tests/stories_training.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace top_k_target_test {

double rounding_gamma(int64_t k) { return static_cast<double>(k) * testing::kFloat32UnitRoundoff; }

/// δ of the header for a float32 log-softmax of `logits` [..., V].
double log_softmax_error(const torch::Tensor& logits) {
  return 2 * rounding_gamma(logits.size(-1)) * std::max(1.0, logits.abs().max().item<double>());
}

/// Teacher and student logits [rows, V] a few nats apart, spread over a few nats.
std::pair<torch::Tensor, torch::Tensor> logits(int64_t rows, int64_t vocab) {
  torch::manual_seed(5);
  auto teacher = 3 * torch::randn({rows, vocab});
  return {teacher, teacher + torch::randn({rows, vocab})};
}

/// The KL between the teacher's and the student's distributions merged into the outcomes
/// `top` (token ids) and "every other token", in float64, by plain loops: the definition.
double merged_kl(const torch::Tensor& teacher_logits, const torch::Tensor& student_logits,
                 const std::vector<int64_t>& top) {
  const auto pt = torch::softmax(teacher_logits.to(torch::kDouble), -1);
  const auto ps = torch::softmax(student_logits.to(torch::kDouble), -1);
  double kl = 0, rest_t = 1, rest_s = 1;
  for (int64_t v : top) {
    const double a = pt[v].item<double>(), b = ps[v].item<double>();
    kl += a * std::log(a / b);
    rest_t -= a;
    rest_s -= b;
  }
  return kl + rest_t * std::log(rest_t / rest_s);
}

std::vector<int64_t> ids(const torch::Tensor& indices) {
  const auto i = indices.to(torch::kLong).contiguous();
  return {i.data_ptr<int64_t>(), i.data_ptr<int64_t>() + i.numel()};
}

}  // namespace top_k_target_test

using top_k_target_test::rounding_gamma;
using top_k_target_test::log_softmax_error;

CATCH_TEST_CASE("top-k teacher target: the KL of the merged outcomes, at most the whole KL", "[top_k]") {
  const int64_t rows = 6, vocab = 300, k = 5;
  const auto [zt, zs] = top_k_target_test::logits(rows, vocab);
  const auto target = pruner::top_k_target(torch::log_softmax(zt, -1), k);
  CATCH_CHECK(target.log_probs.sizes() == torch::IntArrayRef({rows, k}));
  CATCH_CHECK(target.indices.scalar_type() == torch::kInt);
  CATCH_CHECK(target.bytes() == rows * (k * 8 + 4));
  const auto kl = pruner::top_k_token_kl(target, torch::log_softmax(zs, -1));
  const auto whole = pruner::token_kl(torch::log_softmax(zt.to(torch::kDouble), -1),
                                      torch::log_softmax(zs.to(torch::kDouble), -1));
  const double delta = std::max(log_softmax_error(zt), log_softmax_error(zs));
  for (int64_t r = 0; r < rows; ++r) {
    CATCH_INFO("row " << r);
    // The k tokens are the teacher's most probable, most probable first.
    const auto [best, best_ids] = torch::topk(zt[r].to(torch::kDouble), k);
    CATCH_CHECK(top_k_target_test::ids(target.indices[r]) == top_k_target_test::ids(best_ids));
    const double rest = 1 - torch::softmax(zt[r].to(torch::kDouble), -1).index({best_ids}).sum().item<double>();
    CATCH_CHECK(std::abs(target.rest_log_prob[r].item<double>() - std::log(rest)) <= delta);
    const double reference = top_k_target_test::merged_kl(zt[r], zs[r], top_k_target_test::ids(best_ids));
    CATCH_CHECK(std::abs(kl[r].item<double>() - reference) <= 2 * delta + rounding_gamma(k + 1) * 2 * (1 + reference));
    // Merging outcomes loses information: strictly less than the whole KL for random logits.
    CATCH_CHECK(reference < whole[r].item<double>());
  }
  CATCH_CHECK_THROWS_AS(pruner::top_k_target(torch::log_softmax(zt, -1), 0), Error);
  CATCH_CHECK_THROWS_AS(pruner::top_k_target(torch::zeros({2, 1}), 1), Error);
}

CATCH_TEST_CASE("top-k teacher target: with one token in the bucket it is the whole KL, gradient included",
                "[top_k]") {
  const auto [zt, zs] = top_k_target_test::logits(4, 40);
  for (int64_t k : {39, 40, 1000}) {  // capped at V - 1
    CATCH_INFO("k " << k);
    const auto target = pruner::top_k_target(torch::log_softmax(zt, -1), k);
    CATCH_CHECK(target.log_probs.size(-1) == 39);
    auto z_top = zs.clone().requires_grad_(true), z_whole = zs.clone().requires_grad_(true);
    const auto top = pruner::top_k_token_kl(target, torch::log_softmax(z_top, -1));
    const auto whole = pruner::token_kl(torch::log_softmax(zt, -1), torch::log_softmax(z_whole, -1));
    const auto terms = torch::softmax(zt, -1) * (torch::log_softmax(zt, -1) - torch::log_softmax(zs, -1));
    const double delta = std::max(log_softmax_error(zt), log_softmax_error(zs));
    // Both sum the same V terms in another order, the bucket's by a logsumexp of one entry.
    const auto bound = 2 * delta + 2 * rounding_gamma(40) * terms.abs().sum(-1);
    CATCH_CHECK(((top - whole).abs() <= bound).all().item<bool>());
    top.sum().backward();
    whole.sum().backward();
    const auto p = torch::softmax(zs, -1) + torch::softmax(zt, -1);
    CATCH_CHECK(((z_top.grad() - z_whole.grad()).abs() <= p * 4 * delta).all().item<bool>());
  }
}

CATCH_TEST_CASE("top-k teacher target: p_s - q is the KL's gradient with respect to the student's logits", "[top_k]") {
  const auto [zt, zs] = top_k_target_test::logits(5, 200);
  const auto target = pruner::top_k_target(torch::log_softmax(zt, -1), 7);
  auto z = zs.to(torch::kDouble).requires_grad_(true);
  const pruner::TopKTarget target64{target.log_probs.to(torch::kDouble), target.indices,
                                    target.rest_log_prob.to(torch::kDouble)};
  pruner::top_k_token_kl(target64, torch::log_softmax(z, -1)).sum().backward();  // autograd, float64
  const auto log_s = torch::log_softmax(zs, -1);
  const auto q = pruner::top_k_gradient_target(target, log_s);
  CATCH_CHECK((q.sum(-1) - 1).abs().max().item<double>() <= 4 * log_softmax_error(zs));  // a distribution
  const auto p = log_s.exp() + q;
  CATCH_CHECK((((log_s.exp() - q).to(torch::kDouble) - z.grad()).abs() <= p * 4 * log_softmax_error(zs))
                  .all()
                  .item<bool>());
}

CATCH_TEST_CASE("chunked top-k KL: loss and gradients equal the whole batch's within float32 rounding", "[top_k]") {
  torch::manual_seed(11);
  const int64_t n = 37, h = 16, vocab = 1000, k = 8;
  const auto hs = torch::randn({n, h}), ht = hs + 0.3 * torch::randn({n, h});
  const auto w = torch::randn({vocab, h}) / std::sqrt(static_cast<double>(h)) * 2;
  // The target from the teacher's hidden states, a chunk at a time or at once: the same tokens.
  const auto target = pruner::top_k_target(torch::log_softmax(torch::matmul(ht, w.t()), -1), k);
  const auto chunked_target = pruner::chunked_top_k_target(ht.reshape({1, n, h}), w, 5, k);
  CATCH_CHECK(chunked_target.log_probs.sizes() == torch::IntArrayRef({1, n, k}));
  CATCH_CHECK(torch::equal(chunked_target.indices.reshape({n, k}), target.indices));
  const double dz = rounding_gamma(h) * torch::matmul(torch::max(hs.abs(), ht.abs()), w.abs().t()).max().item<double>();
  const double delta = 2 * dz + log_softmax_error(torch::matmul(hs, w.t()));
  CATCH_CHECK(((chunked_target.log_probs.reshape({n, k}) - target.log_probs).abs() <= 2 * delta).all().item<bool>());
  // Float64 reference by autograd, against the same (float32) target.
  auto hs64 = hs.to(torch::kDouble).requires_grad_(true);
  auto w64 = w.to(torch::kDouble).requires_grad_(true);
  const pruner::TopKTarget target64{target.log_probs.to(torch::kDouble), target.indices,
                                    target.rest_log_prob.to(torch::kDouble)};
  const auto log_s64 = torch::log_softmax(torch::matmul(hs64, w64.t()), -1);
  const auto per_token = pruner::top_k_token_kl(target64, log_s64);
  const auto ref = per_token.sum();
  ref.backward();
  const double loss_tol = n * 2 * delta + rounding_gamma(k + 1) * 2 * (n + ref.item<double>());
  const auto ps = log_s64.exp().detach();
  const auto q = pruner::top_k_gradient_target(target64, log_s64.detach());
  const auto moved = (ps + q) * 4 * delta, grad_dz = (ps - q).abs();
  const auto hs_tol = torch::matmul(moved + rounding_gamma(vocab) * grad_dz, w.abs().to(torch::kDouble));
  const auto w_tol = torch::matmul((moved + rounding_gamma(n) * grad_dz).t(), hs.abs().to(torch::kDouble));
  for (int64_t chunk : {1, 5, 37, 64}) {
    CATCH_INFO("chunk " << chunk);
    auto hs_c = hs.clone().requires_grad_(true);
    auto w_c = w.clone().requires_grad_(true);
    const auto kl = pruner::chunked_top_k_kl_sum(hs_c, target, {w_c, w, chunk});
    CATCH_CHECK(std::abs(kl.item<double>() - ref.item<double>()) <= loss_tol);
    kl.backward();
    CATCH_CHECK(((hs_c.grad().to(torch::kDouble) - hs64.grad()).abs() <= hs_tol).all().item<bool>());
    CATCH_CHECK(((w_c.grad().to(torch::kDouble) - w64.grad()).abs() <= w_tol).all().item<bool>());
  }
  CATCH_CHECK_THROWS_AS(pruner::chunked_top_k_kl_sum(hs, target.slice(0, 30), {w, w, 4}), Error);
  CATCH_CHECK_THROWS_AS(pruner::chunked_top_k_kl_sum(hs, target, {w, w, 0}), Error);
}

CATCH_TEST_CASE("stories260K: top-k targets with one token in the bucket train the whole KL's gates, top 16 others",
                "[top_k][llama]") {
  const auto dir = testing::converted_stories();
  auto train = [&](int64_t top_k, int64_t chunk, int64_t cache_mib) {
    return testing::train_stories_20_steps(dir, [=](pruner::GateTrainingOptions& o) {
      o.teacher_top_k = top_k;
      o.kl_chunk_tokens = chunk;
      o.teacher_cache_mib = cache_mib;
    });
  };
  const auto whole = train(0, -1, 0);
  // 511 of stories260K's 512 tokens, chunked and cached: the same objective as the whole KL.
  const auto top_511 = train(511, 7, 64);
  // The chunked KL test's bound (tests/chunked_kl_test.cpp): 20 steps of AdamW at lr 0.1 moved by a
  // relative γ_{V+H} in each gradient.
  const double tol = 20 * 0.1 * 4 * rounding_gamma(512 + 64);
  CATCH_CHECK(testing::largest_log_alpha_difference(whole, top_511) <= tol);
  CATCH_CHECK(testing::largest_log_alpha_move(whole) > 100 * tol);
  // Top 16: another objective (a lower bound of the KL), so other gates; recorded for --resume.
  const auto top_16 = train(16, -1, 64);
  CATCH_CHECK(testing::largest_log_alpha_difference(whole, top_16) > 100 * tol);
  CATCH_CHECK(top_16.settings["teacher_top_k"] == 16);
}

CATCH_TEST_CASE("gate training refuses --teacher-top-k for a model without a vocabulary", "[top_k][training]") {
  auto ckpt = testing::tiny_checkpoint(2, 4);  // an encoder
  auto corpus = testing::random_corpus(32, 8, 3);
  pruner::GateTrainingOptions o;
  o.target_sparsity = 0.25;
  o.steps = 2;
  o.teacher_top_k = 64;
  o.out_dir = testing::temp_dir("top-k-encoder");
  CATCH_CHECK_THROWS_WITH(pruner::train_gates(ckpt, corpus, o), Catch::Contains("--teacher-top-k 64"));
  CATCH_CHECK(!std::filesystem::exists(o.out_dir / "gates.json"));
}

CATCH_TEST_CASE("causal-LM top-k objective: whole batch and chunks agree, pads are left out, K = V - 1 is the KL",
                "[top_k]") {
  torch::manual_seed(23);
  const int64_t batch = 2, length = 4, h = 8, vocab = 30;
  const auto hs = torch::randn({batch, length, h}), ht = hs + 0.5 * torch::randn({batch, length, h});
  const auto w = torch::randn({vocab, h});
  const auto mask = torch::tensor({{1, 1, 1, 1}, {1, 1, 0, 0}});
  const auto logits_t = torch::matmul(ht, w.t()), logits_s = torch::matmul(hs, w.t());
  const auto delta = 2 * rounding_gamma(h) * torch::matmul(torch::max(hs.abs(), ht.abs()), w.abs().t()).max().item<double>() +
                     log_softmax_error(torch::cat({logits_s, logits_t}));
  for (int64_t k : {int64_t{5}, vocab - 1}) {
    CATCH_INFO("k " << k);
    const auto target = pruner::top_k_target(torch::log_softmax(logits_t, -1), k);
    const auto whole = pruner::causal_lm_top_k_distillation(logits_s, target, mask);
    // Two evaluations, each off by a mean of per-token bounds 2δ + γ_V Σ|terms| (header), Σ|terms| ≤ KL + 2.
    const double tol = 2 * (2 * delta + rounding_gamma(vocab) * (2 + whole.kl.item<double>()));
    const auto chunked = pruner::chunked_causal_lm_top_k_distillation(hs, target, mask, {w, w, 2});
    CATCH_CHECK(std::abs(whole.kl.item<double>() - chunked.kl.item<double>()) <= tol);
    // The mean over the 6 real tokens: changing a pad's target changes nothing.
    auto moved = target;
    moved.log_probs = target.log_probs.clone();
    moved.log_probs[1][3].fill_(-1);
    CATCH_CHECK(pruner::causal_lm_top_k_distillation(logits_s, moved, mask).kl.item<double>() ==
                whole.kl.item<double>());
    if (k == vocab - 1)
      CATCH_CHECK(std::abs(whole.kl.item<double>() -
                           pruner::causal_lm_distillation(logits_s, logits_t, mask).kl.item<double>()) <= tol);
  }
}
