#include "pruner/objectives/top_k_target.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::pruner {
namespace {

/// log Σ_{v ∉ indices} exp(log_probs[v]) per position: log_probs [..., V], indices [..., k].
torch::Tensor rest_log_prob(const torch::Tensor& log_probs, const torch::Tensor& indices) {
  const auto others =
      log_probs.scatter(-1, indices.to(torch::kLong), -std::numeric_limits<double>::infinity());
  return torch::logsumexp(others, -1);
}

}  // namespace

TopKTarget TopKTarget::select(const torch::Tensor& rows) const {
  const int64_t k = log_probs.size(-1);
  return {log_probs.reshape({-1, k}).index({rows}), indices.reshape({-1, k}).index({rows}),
          rest_log_prob.reshape({-1}).index({rows})};
}

TopKTarget TopKTarget::slice(int64_t begin, int64_t end) const {
  return {log_probs.slice(0, begin, end), indices.slice(0, begin, end), rest_log_prob.slice(0, begin, end)};
}

int64_t TopKTarget::bytes() const {
  int64_t n = 0;
  for (const auto* t : {&log_probs, &indices, &rest_log_prob})
    if (t->defined()) n += static_cast<int64_t>(t->nbytes());
  return n;
}

TopKTarget top_k_target(const torch::Tensor& log_probs, int64_t k) {
  const int64_t vocab = log_probs.size(-1);
  if (k < 1 || vocab < 2)
    throw Error(fmt::format("top-k teacher target with k = {} over {} tokens: k must be >= 1 and the vocabulary "
                            "at least 2 tokens", k, vocab));
  const auto lp = log_probs.to(torch::kFloat);
  auto [values, indices] = torch::topk(lp, std::min(k, vocab - 1), -1);
  return {values, indices.to(torch::kInt), rest_log_prob(lp, indices)};
}

torch::Tensor top_k_token_kl(const TopKTarget& target, const torch::Tensor& log_student) {
  const auto student_top = log_student.gather(-1, target.indices.to(torch::kLong));
  const auto student_rest = rest_log_prob(log_student, target.indices);
  const auto& teacher_rest = target.rest_log_prob;
  return (target.log_probs.exp() * (target.log_probs - student_top)).sum(-1) +
         teacher_rest.exp() * (teacher_rest - student_rest);
}

torch::Tensor top_k_gradient_target(const TopKTarget& target, const torch::Tensor& log_student) {
  const auto student_rest = rest_log_prob(log_student, target.indices);
  const auto tail = (log_student + (target.rest_log_prob - student_rest).unsqueeze(-1)).exp();
  return tail.scatter(-1, target.indices.to(torch::kLong), target.log_probs.exp());
}

}  // namespace headprune::pruner
