#include "gates/hard_concrete.h"

#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::gates {

DeterministicRule parse_rule(const std::string& name) {
  if (name == "louizos") return DeterministicRule::kLouizos;
  if (name == "cofi") return DeterministicRule::kCoFi;
  throw UsageError(fmt::format("gate rule '{}' is not one of louizos, cofi", name));
}

std::string to_string(DeterministicRule rule) {
  return rule == DeterministicRule::kLouizos ? "louizos" : "cofi";
}

HardConcreteGates::HardConcreteGates(std::vector<int64_t> heads_per_layer,
                                     HardConcreteOptions options)
    : heads_per_layer_(std::move(heads_per_layer)), options_(options) {
  for (auto n : heads_per_layer_) {
    if (n < 0) throw Error("a layer cannot have a negative number of heads");
    total_ += n;
  }
  if (!(options_.beta > 0)) throw Error(fmt::format("temperature beta must be > 0, got {}", options_.beta));
  if (!(options_.gamma < 0 && options_.zeta > 1))
    throw Error(fmt::format("stretch limits must satisfy gamma < 0 < 1 < zeta, got {} and {}",
                            options_.gamma, options_.zeta));
  log_alpha = register_parameter("log_alpha", torch::full({total_}, options_.log_alpha_init));
}

torch::Tensor HardConcreteGates::sample() const {
  const auto& o = options_;
  auto u = torch::rand_like(log_alpha) * (1 - 2 * o.eps) + o.eps;
  auto s = torch::sigmoid((torch::log(u) - torch::log(1 - u) + log_alpha) / o.beta);
  return torch::clamp(s * (o.zeta - o.gamma) + o.gamma, 0.0, 1.0);
}

torch::Tensor HardConcreteGates::prob_nonzero() const {
  const auto& o = options_;
  return torch::sigmoid(log_alpha - o.beta * std::log(-o.gamma / o.zeta));
}

torch::Tensor HardConcreteGates::expected_l0() const { return prob_nonzero().sum(); }

torch::Tensor HardConcreteGates::deterministic(DeterministicRule rule) const {
  torch::NoGradGuard no_grad;
  const auto& o = options_;
  auto z = torch::clamp(torch::sigmoid(log_alpha) * (o.zeta - o.gamma) + o.gamma, 0.0, 1.0);
  if (rule == DeterministicRule::kCoFi && total_ > 0) {
    const double expected_zeros = static_cast<double>(total_) - expected_l0().item<double>();
    const auto zeros = std::min<int64_t>(total_, std::llround(std::max(0.0, expected_zeros)));
    if (zeros > 0) {
      auto lowest = std::get<1>(torch::topk(log_alpha, zeros, 0, /*largest=*/false));
      z.index_fill_(0, lowest, 0.0);
    }
  }
  return z.detach().clone();
}

std::vector<torch::Tensor> HardConcreteGates::split(const torch::Tensor& per_head) const {
  std::vector<torch::Tensor> out;
  int64_t offset = 0;
  for (auto n : heads_per_layer_) {
    out.push_back(per_head.narrow(0, offset, n));
    offset += n;
  }
  return out;
}

torch::Tensor through_parents(const torch::Tensor& values, const std::vector<int64_t>& parent) {
  const auto n = static_cast<int64_t>(parent.size());
  const auto total = values.size(0);
  std::vector<int64_t> index(parent.size());
  for (int64_t i = 0; i < n; ++i) {
    const auto p = parent[static_cast<std::size_t>(i)];
    if (p >= total || (p >= 0 && p < n))
      throw Error(fmt::format("gate {}'s parent {} is not a parent gate (units 0..{}, gates 0..{})", i, p, n - 1,
                              total - 1));
    index[static_cast<std::size_t>(i)] = p < 0 ? total : p;  // `total`: the appended 1
  }
  const auto with_one = torch::cat({values, torch::ones({1}, values.options())});
  return values.narrow(0, 0, n) * with_one.index_select(0, torch::tensor(index, torch::kLong).to(values.device()));
}

torch::Tensor log_alpha_of_probability(const torch::Tensor& p, const HardConcreteOptions& o) {
  const auto q = p.clamp(1e-12, 1 - 1e-12);
  return torch::log(q) - torch::log1p(-q) + o.beta * std::log(-o.gamma / o.zeta);
}

}  // namespace headprune::gates
