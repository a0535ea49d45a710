// The distillation objectives against values computed by hand (pruner/objectives/distillation.h).
#include <cmath>

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/sentence_pooling.h"
#include "pruner/objectives/distillation.h"

using namespace headprune;

CATCH_TEST_CASE("token KL and the causal-LM objective equal their hand-computed values", "[distillation]") {
  // Teacher p = (0.5, 0.25, 0.25), student q = (0.25, 0.25, 0.5):
  // KL(p||q) = 0.5 ln 2 + 0 + 0.25 ln 0.5 = 0.25 ln 2.
  auto p = torch::tensor({0.5, 0.25, 0.25}).log().view({1, 1, 3});
  auto q = torch::tensor({0.25, 0.25, 0.5}).log().view({1, 1, 3});
  CATCH_CHECK(pruner::token_kl(p, q).item<double>() == Approx(0.25 * std::log(2.0)).epsilon(1e-6));
  CATCH_CHECK(pruner::token_kl(p, p).item<double>() == Approx(0.0).margin(1e-7));
  // The objective averages over real tokens only: a padded position with a huge KL is ignored.
  auto teacher = torch::cat({p, p}, 1), student = torch::cat({q, torch::tensor({10.0, -10.0, 0.0}).view({1, 1, 3})}, 1);
  auto loss = pruner::causal_lm_distillation(student, teacher, torch::tensor({{1, 0}}));
  CATCH_CHECK(loss.kl.item<double>() == Approx(0.25 * std::log(2.0)).epsilon(1e-6));
  CATCH_CHECK(loss.total.item<double>() == loss.kl.item<double>());
}

CATCH_TEST_CASE("the encoder objective: relative hidden-state error plus 1 - cosine of embeddings", "[distillation]") {
  // One sequence, two real tokens and one pad; H = 2; mean pooling.
  auto teacher = torch::tensor({{{1.0, 0.0}, {0.0, 1.0}, {5.0, 5.0}}});
  auto student = torch::tensor({{{1.0, 1.0}, {0.0, 1.0}, {-9.0, 3.0}}});
  auto mask = torch::tensor({{1, 1, 0}});
  models::SentencePooling mean;
  auto loss = pruner::encoder_distillation(student, teacher, mask, mean, 2.0);
  // hidden: ||(0,1)||² / (1 + 1) = 0.5 (the pad is ignored).
  CATCH_CHECK(loss.hidden.item<double>() == Approx(0.5).epsilon(1e-6));
  // embeddings: teacher (0.5, 0.5), student (0.5, 1.0): cos = 0.75 / (√0.5 · √1.25).
  const double cos = 0.75 / (std::sqrt(0.5) * std::sqrt(1.25));
  CATCH_CHECK(loss.embedding.item<double>() == Approx(1 - cos).epsilon(1e-6));
  CATCH_CHECK(loss.total.item<double>() == Approx(0.5 + 2.0 * (1 - cos)).epsilon(1e-6));
  // No gradient reaches the teacher.
  auto s = student.clone().requires_grad_(true), t = teacher.clone().requires_grad_(true);
  pruner::encoder_distillation(s, t, mask, mean, 1.0).total.backward();
  CATCH_CHECK(s.grad().defined());
  CATCH_CHECK(!t.grad().defined());
}

CATCH_TEST_CASE("layer-wise distillation: the mean over layers of each layer's relative error, pads ignored",
                "[distillation]") {
  // Two layers, one sequence of two real tokens and one pad, H = 2.
  auto mask = torch::tensor({{1, 1, 0}});
  auto t0 = torch::tensor({{{1.0, 0.0}, {0.0, 1.0}, {7.0, 7.0}}});
  auto s0 = torch::tensor({{{1.0, 1.0}, {0.0, 1.0}, {0.0, 0.0}}});  // error 1 / energy 2 = 0.5
  auto t1 = torch::tensor({{{2.0, 0.0}, {0.0, 0.0}, {1.0, 1.0}}});
  auto s1 = torch::tensor({{{2.0, 0.0}, {0.0, 0.0}, {9.0, 9.0}}});  // 0: the pad differs only
  auto s0g = s0.clone().requires_grad_(true), t0g = t0.clone().requires_grad_(true);
  const auto layers = pruner::layer_distillation({s0g, s1}, {t0g, t1}, mask);
  CATCH_CHECK(layers.item<double>() == Approx((0.5 + 0.0) / 2).epsilon(1e-6));
  layers.backward();
  // d/ds0 of (1/2)·||s0 − t0||²_real / 2: (s0 − t0) / 2 on real tokens, 0 on the pad.
  CATCH_CHECK(torch::allclose(s0g.grad(), torch::tensor({{{0.0, 0.5}, {0.0, 0.0}, {0.0, 0.0}}}).to(s0g.dtype())));
  CATCH_CHECK_FALSE(t0g.grad().defined());  // the teacher carries no gradient
  // Added with its weight, kept as a part, named in the log line.
  auto base = pruner::causal_lm_distillation(torch::zeros({1, 3, 4}), torch::zeros({1, 3, 4}), mask);
  const auto with = pruner::with_layer_loss(base, layers.detach(), 3.0);
  CATCH_CHECK(with.total.item<double>() == Approx(base.total.item<double>() + 3.0 * 0.25).epsilon(1e-6));
  CATCH_CHECK(with.parts().at("layer_loss").get<double>() == Approx(0.25));
  CATCH_CHECK_THAT(with.describe(), Catch::Contains("layers 0.25000"));
  // The last layer is the main objective's: only the others are matched.
  CATCH_CHECK(pruner::distilled_layers({t0, t1, s0}).size() == 2);
  CATCH_CHECK_THROWS_AS(pruner::layer_distillation({s0}, {t0, t1}, mask), Error);
  CATCH_CHECK_THROWS_AS(pruner::layer_distillation({}, {}, mask), Error);
}
