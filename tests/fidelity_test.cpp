// Held-out fidelity of a language model (pruner/measure/fidelity.h) computed with its LM heads
// run a few tokens at a time equals the definition on the models' own logits.
//
// Tolerance. Both sides use the same hidden states (the same batch, no padding); they differ in
// the LM-head product (rows computed in other blocks: off by at most δz = γ_H · max Σ_i |h_i w_vi|,
// Higham eq. 3.5) and the float32 log-softmax against the float64 reference (δ = 2 γ_V ·
// max(1, max|z|): the shift and the sum of V exponentials). A token's KL moves by at most
// 2 (δz + δ) from each model's side plus γ_V Σ_v |terms|; a token's NLL by δz + δ, so the
// perplexity by a relative 2 (δz + δ) (exp of the mean, small arguments).
#include <algorithm>
#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/measure/fidelity.h"
#include "pruner/objectives/distillation.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

CATCH_TEST_CASE("fidelity of a language model: KL and perplexities a chunk of tokens at a time equal the logits'",
                "[fidelity][llama]") {
  auto teacher = models::load_checkpoint(testing::fixture_path("llama3"), torch::kCPU);
  auto student = models::load_checkpoint(testing::fixture_path("llama3"), torch::kCPU);
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  for (auto& p : student.model->parameters()) p.add_(0.05 * torch::randn_like(p));  // another model
  const int64_t vocab = teacher.model->config().vocab_size, rows = 3, length = 9;
  const auto ids = torch::randint(1, vocab, {rows, length}, torch::kLong);
  std::vector<std::vector<int64_t>> sequences;
  for (int64_t r = 0; r < rows; ++r) sequences.emplace_back(ids[r].data_ptr<int64_t>(), ids[r].data_ptr<int64_t>() + length);

  // The definition, on the whole logits in float64.
  const models::ModelInputs in{ids, torch::ones_like(ids), {}};
  const auto out_s = student.model->forward(in, nullptr), out_t = teacher.model->forward(in, nullptr);
  const auto log_s = torch::log_softmax(out_s.logits.to(torch::kDouble), -1);
  const auto log_t = torch::log_softmax(out_t.logits.to(torch::kDouble), -1);
  const auto terms = log_t.exp() * (log_t - log_s);
  const double kl = terms.sum().item<double>() / (rows * length);
  const auto next = ids.slice(1, 1, length).unsqueeze(-1);
  auto perplexity = [&](const torch::Tensor& lp) {
    return std::exp(-lp.slice(1, 0, length - 1).gather(-1, next).mean().item<double>());
  };
  // Tolerance (header).
  const double u = testing::kFloat32UnitRoundoff;
  const auto head = teacher.model->lm_head_weight().abs();
  double dz = 0, z = 0;
  for (const auto* out : {&out_s, &out_t}) {
    const auto h = out->last_hidden_state.abs().reshape({-1, head.size(1)});
    dz = std::max(dz, teacher.model->config().hidden_size * u * torch::matmul(h, head.t()).max().item<double>());
    z = std::max(z, out->logits.abs().max().item<double>());
  }
  const double step = dz + 2 * vocab * u * std::max(1.0, z);
  const double kl_tol = 4 * step + vocab * u * terms.abs().sum(-1).max().item<double>();

  for (int64_t chunk : {0, 1, 4, 1000}) {  // 0: automatic (whole batches at this size)
    CATCH_INFO("chunk " << chunk);
    const auto f = pruner::measure_fidelity(*student.model, {}, *teacher.model, sequences, 0, teacher.pooling, 8,
                                            torch::kCPU, chunk);
    CATCH_REQUIRE(f.has_lm);
    CATCH_CHECK(std::abs(f.kl - kl) <= kl_tol);
    CATCH_CHECK(std::abs(f.student_perplexity / perplexity(log_s) - 1) <= 2 * step);
    CATCH_CHECK(std::abs(f.teacher_perplexity / perplexity(log_t) - 1) <= 2 * step);
  }
  CATCH_CHECK(kl > 100 * kl_tol);  // the perturbation made another model
  // The models give logits again afterwards.
  CATCH_CHECK(student.model->forward(in, nullptr).logits.defined());
  CATCH_CHECK_THROWS_AS(pruner::measure_fidelity(*student.model, {}, *teacher.model, sequences, 0,
                                                 teacher.pooling, 8, torch::kCPU, -1),
                        Error);
}
