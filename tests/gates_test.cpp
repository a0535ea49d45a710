// Hard-concrete gates (Louizos et al. 2018) and sparsity control.
#include <cmath>
#include <limits>
#include <utility>

#include <torch/torch.h>

#include "gates/hard_concrete.h"
#include "gates/keep_mask.h"
#include "gates/sparsity.h"
#include "models/errors.h"
#include "tests/test_support.h"

using namespace headprune;

namespace {

/// Constraints with only a per-layer minimum.
gates::MaskConstraints min_heads(int64_t n) {
  gates::MaskConstraints c;
  c.min_heads_per_layer = n;
  return c;
}

gates::SparsityMeasure head_measure(int64_t n) {
  gates::SparsityMeasure m;
  m.head_cost.assign(static_cast<size_t>(n), 1.0);
  m.total_cost = static_cast<double>(n);
  return m;
}

}  // namespace

CATCH_TEST_CASE("expected L0 equals the Monte-Carlo frequency of non-zero samples", "[gates]") {
  torch::manual_seed(3);
  gates::HardConcreteGates g({5, 3});
  {
    torch::NoGradGuard no_grad;
    g.log_alpha.copy_(torch::tensor({-4.0, -2.0, -0.5, 0.0, 0.7, 1.5, 3.0, -1.0}));
  }
  const int draws = 40000;
  auto nonzero = torch::zeros({8}, torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < draws; ++i) nonzero += (g.sample() > 0).to(torch::kDouble);
  }
  auto frequency = nonzero / draws;
  auto expected = g.prob_nonzero().detach().to(torch::kDouble);
  for (int i = 0; i < 8; ++i) {
    CATCH_INFO("head " << i << ": P " << expected[i].item<double>() << " freq "
                       << frequency[i].item<double>());
    CATCH_CHECK(std::abs(frequency[i].item<double>() - expected[i].item<double>()) <= 0.01);
  }
  CATCH_CHECK(std::abs(g.expected_l0().item<double>() - frequency.sum().item<double>()) <= 0.08);
}

CATCH_TEST_CASE("nested gates: a unit is open as often as it and its sublayer gate are, and costs that much",
                "[gates][sublayers]") {
  torch::manual_seed(5);
  gates::HardConcreteGates g({3, 2});  // three units, then two parent gates (CoFi's z_MHA / z_FFN)
  {
    torch::NoGradGuard no_grad;
    g.log_alpha.copy_(torch::tensor({1.0, -0.5, 2.0, 0.3, -1.0}));
  }
  const std::vector<int64_t> parent = {3, 3, 4};
  const int draws = 40000;
  auto nonzero = torch::zeros({3}, torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < draws; ++i) nonzero += (gates::through_parents(g.sample(), parent) > 0).to(torch::kDouble);
  }
  gates::SparsityMeasure m;
  m.head_cost = {1.0, 2.0, 3.0};
  m.total_cost = 10.0;
  m.parent = parent;
  const auto p = g.prob_nonzero().detach().to(torch::kDouble);
  const auto alive = m.alive(g).detach().to(torch::kDouble);
  double want = 0;
  for (int i = 0; i < 3; ++i) {
    const double product = p[i].item<double>() * p[parent[static_cast<std::size_t>(i)]].item<double>();
    CATCH_INFO("unit " << i);
    CATCH_CHECK(alive[i].item<double>() == Approx(product).epsilon(1e-6));
    // 40,000 draws: one standard deviation of a frequency is at most 0.0025.
    CATCH_CHECK(std::abs(nonzero[i].item<double>() / draws - product) <= 0.01);
    want += m.head_cost[static_cast<std::size_t>(i)] * (1 - product) / m.total_cost;
  }
  CATCH_CHECK(m.expected(g).item<double>() == Approx(want).epsilon(1e-6));
  // The effective log_alpha of a unit is that of one gate as likely to be open.
  const auto back = gates::log_alpha_of_probability(g.prob_nonzero().detach(), g.options());
  CATCH_CHECK(torch::allclose(back, g.log_alpha.detach(), 1e-4, 1e-4));
  const auto values = torch::tensor({0.5, 1.0, 0.25, 0.5, 0.0});
  CATCH_CHECK(torch::equal(gates::through_parents(values, {3, -1, 4}), torch::tensor({0.25, 1.0, 0.0})));
  CATCH_CHECK_THROWS_AS(gates::through_parents(values, {1, 3, 4}), headprune::Error);  // a unit, not a parent
  CATCH_CHECK_THROWS_AS(gates::through_parents(values, {3, 3, 5}), headprune::Error);  // past the gates
}

CATCH_TEST_CASE("gradients reach log_alpha through samples and expected L0", "[gates]") {
  gates::HardConcreteOptions options;
  options.log_alpha_init = 0.5;
  gates::HardConcreteGates g({4}, options);
  auto z = g.sample();
  (z.sum() + g.expected_l0()).backward();
  CATCH_REQUIRE(g.log_alpha.grad().defined());
  CATCH_CHECK(g.log_alpha.grad().abs().sum().item<double>() > 0);
}

CATCH_TEST_CASE("deterministic gates lie in [0,1] and follow both rules", "[gates]") {
  gates::HardConcreteGates g({6});
  {
    torch::NoGradGuard no_grad;
    g.log_alpha.copy_(torch::tensor({-10.0, -3.0, -0.2, 0.0, 2.0, 10.0}));
  }
  auto z = g.deterministic(gates::DeterministicRule::kLouizos);
  CATCH_CHECK(z.min().item<double>() >= 0);
  CATCH_CHECK(z.max().item<double>() <= 1);
  // Louizos eq. 13: clip(sigmoid(la)*1.2 - 0.1, 0, 1)
  CATCH_CHECK(z[0].item<double>() == 0.0);
  CATCH_CHECK(z[3].item<double>() == Approx(0.5).margin(1e-6));
  CATCH_CHECK(z[5].item<double>() == 1.0);
  auto cofi = g.deterministic(gates::DeterministicRule::kCoFi);
  const auto zeros = std::llround(6 - g.expected_l0().item<double>());
  CATCH_CHECK((cofi == 0).sum().item<int64_t>() == std::max<int64_t>(zeros, (z == 0).sum().item<int64_t>()));
}

CATCH_TEST_CASE("the target keep-mask removes exactly round(target * N) heads", "[gates]") {
  const std::vector<int64_t> layers{12, 12, 12, 12, 12, 12};
  auto score = torch::randn({72});
  for (double target : {0.0, 0.25, 0.5, 0.75, 0.9}) {
    auto keep = gates::keep_mask_for_target(score, layers, head_measure(72), target, min_heads(1));
    const auto removed = std::count(keep.begin(), keep.end(), false);
    CATCH_CHECK(removed == std::llround(target * 72));
    for (size_t l = 0; l < 6; ++l)
      CATCH_CHECK(std::count(keep.begin() + 12 * l, keep.begin() + 12 * (l + 1), true) >= 1);
  }
}

CATCH_TEST_CASE("the target keep-mask removes the lowest scores first", "[gates]") {
  auto score = torch::tensor({5.0, -1.0, 3.0, -2.0, 0.0, 4.0});
  auto keep = gates::keep_mask_for_target(score, {3, 3}, head_measure(6), 0.5, min_heads(0));
  CATCH_CHECK(keep == std::vector<bool>{true, false, true, false, false, true});
}

CATCH_TEST_CASE("minimum heads per layer are respected and impossible targets refused", "[gates]") {
  auto score = torch::tensor({-5.0, -4.0, -3.0, 9.0, 8.0, 7.0});
  auto keep = gates::keep_mask_for_target(score, {3, 3}, head_measure(6), 0.5, min_heads(1));
  // Layer 0 is the least important, but must keep one head.
  CATCH_CHECK(std::count(keep.begin(), keep.begin() + 3, true) == 1);
  CATCH_CHECK(std::count(keep.begin(), keep.end(), false) == 3);
  CATCH_REQUIRE_THROWS_WITH(
      gates::keep_mask_for_target(score, {3, 3}, head_measure(6), 0.9, min_heads(1)),
      Catch::Contains("cannot be reached") && Catch::Contains("--allow-empty-layers"));
  CATCH_REQUIRE_THROWS_AS(gates::validate_target(1.0, {3, 3}, head_measure(6), min_heads(0)), Error);
  CATCH_REQUIRE_THROWS_AS(gates::validate_target(-0.1, {3, 3}, head_measure(6), min_heads(0)), Error);
  // With empty layers allowed, layer 0 can go entirely.
  auto empty_ok = gates::keep_mask_for_target(score, {3, 3}, head_measure(6), 0.5, min_heads(0));
  CATCH_CHECK(std::count(empty_ok.begin(), empty_ok.begin() + 3, true) == 0);
}

CATCH_TEST_CASE("keep-mask from gates revives the best heads of emptied layers", "[gates]") {
  auto gate = torch::tensor({0.0, 0.0, 0.0, 1.0, 0.5, 0.0});
  auto score = torch::tensor({-3.0, -1.0, -2.0, 4.0, 1.0, -5.0});
  auto keep = gates::keep_mask_from_gates(gate, score, {3, 3}, min_heads(1));
  CATCH_CHECK(keep == std::vector<bool>{false, true, false, true, true, false});
}

CATCH_TEST_CASE("the Lagrangian penalty and its ascent", "[gates]") {
  gates::Lagrangian lag;
  {
    torch::NoGradGuard no_grad;
    lag.lambda_1.fill_(2.0);
    lag.lambda_2.fill_(3.0);
  }
  auto s = torch::tensor(0.2);
  auto p = lag.penalty(s, 0.5);
  CATCH_CHECK(p.item<double>() == Approx(2.0 * -0.3 + 3.0 * 0.09));
  p.backward();
  lag.flip_gradients();
  // d/dλ1 = (s - t) = -0.3, flipped -> +0.3: a descent step lowers λ1 (ascent on the penalty).
  CATCH_CHECK(lag.lambda_1.grad().item<double>() == Approx(0.3));
  CATCH_CHECK(lag.lambda_2.grad().item<double>() == Approx(-0.09));
  CATCH_CHECK(gates::ramped_target(0.5, 0, 100) == 0.0);
  CATCH_CHECK(gates::ramped_target(0.5, 50, 100) == Approx(0.25));
  CATCH_CHECK(gates::ramped_target(0.5, 500, 100) == 0.5);
}

CATCH_TEST_CASE("the damped Lagrangian: its pull vanishes 1/(2 kappa) past the target", "[gates]") {
  const double kappa = 10;
  gates::Lagrangian lag(kappa);
  const auto pull = [&](double lambda_1, double lambda_2, double s, double t) {
    {
      torch::NoGradGuard no_grad;
      lag.lambda_1.fill_(lambda_1);
      lag.lambda_2.fill_(lambda_2);
      lag.lambda_1.mutable_grad() = torch::Tensor();
      lag.lambda_2.mutable_grad() = torch::Tensor();
    }
    auto sparsity = torch::tensor(s, torch::kDouble).requires_grad_(true);
    auto p = lag.penalty(sparsity, t);
    p.backward();
    return std::pair{p.item<double>(), sparsity.grad().item<double>()};
  };
  // g = 0.1 past the target after lambda_1 built up to -2: penalty -2 g + (0.5 + 10 * 2) g^2,
  // and the pull on the gates d/ds = -2 + 2 (20.5) g = +2.1 has turned against the overshoot.
  const auto [value, ds] = pull(-2.0, 0.5, 0.6, 0.5);
  CATCH_CHECK(value == Approx(-0.2 + 20.5 * 0.01));
  CATCH_CHECK(ds == Approx(2.1));
  // The multipliers' own gradients are CoFi's (g and g^2): the damping is held constant.
  CATCH_CHECK(lag.lambda_1.grad().item<double>() == Approx(0.1));
  CATCH_CHECK(lag.lambda_2.grad().item<double>() == Approx(0.01));
  // At an overshoot of exactly 1 / (2 kappa) the pull is 0, whatever lambda_1 has grown to (the
  // multipliers are float32: lambda_1 and 2 kappa |lambda_1| g cancel to a few of its roundings).
  const double eps = std::numeric_limits<float>::epsilon();
  for (double lambda_1 : {-0.3, -2.0, -40.0})
    CATCH_CHECK(pull(lambda_1, 0.0, 0.5 + 1 / (2 * kappa), 0.5).second ==
                Approx(0.0).margin(4 * eps * std::abs(lambda_1)));
  // Below the target the pull towards sparsity grows with the gap; at the target it is lambda_1.
  CATCH_CHECK(pull(-2.0, 0.0, 0.4, 0.5).second == Approx(-2.0 - 2 * kappa * 2.0 * 0.1));
  CATCH_CHECK(pull(-2.0, 0.0, 0.5, 0.5).second == Approx(-2.0));
  // kappa = 0 is the plain penalty.
  gates::Lagrangian plain(0.0);
  CATCH_CHECK(plain.damping == 0.0);
  CATCH_CHECK_THROWS_AS(gates::Lagrangian(-1.0), Error);
  CATCH_CHECK_THROWS_AS(gates::Lagrangian(std::numeric_limits<double>::infinity()), Error);
}

CATCH_TEST_CASE("GQA keep-masks: uniform groups, whole groups, and targets no rule can meet", "[gates][gqa]") {
  // 2 layers x 4 query heads; heads 0,1 share KV head 0 and heads 2,3 KV head 1 in each layer.
  const std::vector<int64_t> layers = {4, 4};
  const auto score = torch::tensor({5., 1., 4., 3., 9., 8., 7., 6.});
  gates::MaskConstraints uniform{0, gates::GroupRule::kUniform, {0, 0, 1, 1, 0, 0, 1, 1}};
  // Uniform: one head per group at a time; layer 0's lowest per group are heads 1 and 3.
  auto keep = gates::keep_mask_for_target(score, layers, head_measure(8), 0.25, uniform);
  CATCH_CHECK(keep == std::vector<bool>{true, false, true, false, true, true, true, true});
  auto half = gates::keep_mask_for_target(score, layers, head_measure(8), 0.5, uniform);
  CATCH_CHECK(std::count(half.begin(), half.end(), false) == 4);
  CATCH_CHECK(half[1] == half[3]);  // the groups of a layer always keep equal counts
  CATCH_CHECK(half[5] == half[7]);

  // Whole groups: layer 0's group 0 (mean score 3) goes first.
  auto groups = uniform;
  groups.group_rule = gates::GroupRule::kWholeGroups;
  keep = gates::keep_mask_for_target(score, layers, head_measure(8), 0.25, groups);
  CATCH_CHECK(keep == std::vector<bool>{false, false, true, true, true, true, true, true});

  // 1 or 3 heads of 8 cannot be removed in units of 2: a clear error, with the nearest counts.
  CATCH_CHECK_THROWS_WITH(gates::validate_target(0.125, layers, head_measure(8), uniform),
                          Catch::Contains("nearest: 0") && Catch::Contains("or 2"));
  CATCH_CHECK_THROWS_WITH(gates::keep_mask_for_target(score, layers, head_measure(8), 0.375, groups),
                          Catch::Contains("whole KV groups") && Catch::Contains("nearest: 2"));
  // Groups of unequal size cannot be kept even.
  gates::MaskConstraints uneven{0, gates::GroupRule::kUniform, {0, 0, 0, 1, 0, 0, 1, 1}};
  CATCH_CHECK_THROWS_WITH(gates::keep_mask_for_target(score, layers, head_measure(8), 0.5, uneven),
                          Catch::Contains("different numbers of query heads"));
  CATCH_CHECK_THROWS_AS(gates::parse_group_rule("even"), Error);
}

CATCH_TEST_CASE("uniform layers: every layer keeps the same heads, chosen by each layer's scores", "[gates][gqa]") {
  // 3 layers x 4 heads (no GQA). Layer 2 holds the 4 lowest scores overall, but with uniform
  // layers each layer gives up its own lowest heads, one level at a time.
  const std::vector<int64_t> layers = {4, 4, 4};
  const auto score = torch::tensor({5., 1., 9., 7., 8., 6., 2.5, 4., 0.1, 0.2, 0.3, 0.4});
  gates::MaskConstraints c{1, gates::GroupRule::kNone, {}, true};
  auto keep = gates::keep_mask_for_target(score, layers, head_measure(12), 0.5, c);
  CATCH_CHECK(keep == std::vector<bool>{false, false, true, true, true, true, false, false,
                                        false, false, true, true});
  // Without the constraint the same target takes layer 2's heads first.
  auto free = gates::keep_mask_for_target(score, layers, head_measure(12), 0.5, {1, gates::GroupRule::kNone, {}, false});
  CATCH_CHECK(std::count(free.begin() + 8, free.end(), false) == 3);
  // Steps of 3 heads (one per layer): 0.2 of 12 = 2.4 -> 2 heads is not reachable.
  CATCH_CHECK_THROWS_WITH(gates::validate_target(0.2, layers, head_measure(12), c),
                          Catch::Contains("--uniform-layers") && Catch::Contains("nearest: 0") &&
                              Catch::Contains("or 3"));
  // The per-layer minimum bounds the levels: at most 3 of 4 heads per layer go.
  CATCH_CHECK(gates::max_sparsity(layers, head_measure(12), c) == Approx(0.75));
  // From gates: 5 closed gates -> the nearest whole level count, 6 heads (2 per layer).
  const auto gate = torch::tensor({1., 0., 1., 0., 1., 1., 0., 1., 0., 0., 1., 1.});
  keep = gates::keep_mask_from_gates(gate, score, layers, c);
  CATCH_CHECK(std::count(keep.begin(), keep.end(), false) == 6);
  for (int l = 0; l < 3; ++l) CATCH_CHECK(std::count(keep.begin() + 4 * l, keep.begin() + 4 * l + 4, true) == 2);
  // Layers that already differ cannot be kept alike.
  CATCH_CHECK_THROWS_WITH(gates::keep_mask_for_target(score.narrow(0, 0, 11), {4, 4, 3}, head_measure(11), 0.5, c),
                          Catch::Contains("--uniform-layers needs every layer to hold the same heads"));
}

CATCH_TEST_CASE("uniform layers with GQA: the same query heads per KV group in every layer", "[gates][gqa]") {
  // 2 layers x 4 query heads in 2 KV groups of 2.
  const std::vector<int64_t> layers = {4, 4};
  const auto score = torch::tensor({5., 1., 4., 3., 9., 8., 7., 6.});
  gates::MaskConstraints c{0, gates::GroupRule::kUniform, {0, 0, 1, 1, 0, 0, 1, 1}, true};
  // One level = one head per group in each layer = 4 heads.
  auto keep = gates::keep_mask_for_target(score, layers, head_measure(8), 0.5, c);
  CATCH_CHECK(keep == std::vector<bool>{true, false, true, false, true, false, true, false});
  CATCH_CHECK_THROWS_WITH(gates::validate_target(0.25, layers, head_measure(8), c),
                          Catch::Contains("nearest: 0") && Catch::Contains("or 4"));
}

CATCH_TEST_CASE("head multiple: every layer keeps a multiple of K heads or all of them", "[gates]") {
  // 2 layers x 12 heads (MiniLM's shape); layer 0 holds the lower scores, head 0 the lowest.
  const std::vector<int64_t> layers = {12, 12};
  std::vector<double> s;
  for (int i = 0; i < 24; ++i) s.push_back(i < 12 ? i : 100 + i);
  const auto score = torch::tensor(s);
  const auto kept_in = [](const std::vector<bool>& keep, int l) {
    return std::count(keep.begin() + 12 * l, keep.begin() + 12 * l + 12, true);
  };
  // K = 8: a layer keeps 12 or 8 (or 0 without a minimum); the first chunk is its 4 lowest heads.
  gates::MaskConstraints c{1, gates::GroupRule::kNone, {}, false, 8};
  auto keep = gates::keep_mask_for_target(score, layers, head_measure(24), 4.0 / 24, c);
  CATCH_CHECK(kept_in(keep, 0) == 8);
  CATCH_CHECK(kept_in(keep, 1) == 12);
  CATCH_CHECK_FALSE((keep[0] || keep[1] || keep[2] || keep[3]));
  CATCH_CHECK_THROWS_WITH(gates::validate_target(0.25, layers, head_measure(24), c),
                          Catch::Contains("--head-multiple 8") && Catch::Contains("nearest: 4") &&
                              Catch::Contains("or 8"));
  CATCH_CHECK(gates::max_sparsity(layers, head_measure(24), c) == Approx(8.0 / 24));
  c.min_heads_per_layer = 0;  // 12 heads of one layer go at once: all of layer 0
  keep = gates::keep_mask_for_target(score, layers, head_measure(24), 0.5, c);
  CATCH_CHECK(kept_in(keep, 0) == 0);
  CATCH_CHECK(kept_in(keep, 1) == 12);

  // K = 2: even counts; the lowest heads go in pairs, layer 0 down to 2 (its minimum is 1).
  gates::MaskConstraints even{1, gates::GroupRule::kNone, {}, false, 2};
  keep = gates::keep_mask_for_target(score, layers, head_measure(24), 0.5, even);
  CATCH_CHECK(kept_in(keep, 0) == 2);
  CATCH_CHECK(kept_in(keep, 1) == 10);
  // From gates: 5 closed gates -> the nearest even count (4; ties round down), lowest heads first.
  std::vector<double> g(24, 1.0);
  for (int i : {0, 1, 2, 13, 14}) g[i] = 0;
  keep = gates::keep_mask_from_gates(torch::tensor(g), score, layers, even);
  CATCH_CHECK(std::count(keep.begin(), keep.end(), false) == 4);
  CATCH_CHECK(kept_in(keep, 0) % 2 == 0);

  // With GQA groups of 2 and K = 4, a 4-head layer keeps 4 or 0: whole layers go.
  gates::MaskConstraints groups{0, gates::GroupRule::kWholeGroups, {0, 0, 1, 1, 0, 0, 1, 1}, false, 4};
  keep = gates::keep_mask_for_target(torch::tensor({5., 1., 4., 3., 9., 8., 7., 6.}), {4, 4}, head_measure(8),
                                     0.5, groups);
  CATCH_CHECK(keep == std::vector<bool>{false, false, false, false, true, true, true, true});
  CATCH_CHECK_THROWS_WITH(gates::validate_target(0.25, {4, 4}, head_measure(8), groups),
                          Catch::Contains("as whole KV groups, so that every layer keeps a multiple of 4"));
}
