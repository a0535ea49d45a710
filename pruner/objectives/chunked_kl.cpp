#include "pruner/objectives/chunked_kl.h"

#include <algorithm>
#include <functional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::pruner {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Rows of an LM head stored narrower than the hidden states (a frozen bfloat16 weight,
/// models/checkpoint.h WeightStorage::source) widened at a time: 64 MiB of float32 at hidden
/// size 2048, instead of a float32 copy of the whole head (1 GiB at Llama 3's 128,256 × 2048)
/// alive while every layer's activations are.
constexpr int64_t kWidenedRows = 8192;

/// hidden [n, H] · weightᵀ -> logits [n, V] in hidden's dtype.
torch::Tensor head_product(const torch::Tensor& hidden, const torch::Tensor& weight) {
  if (weight.scalar_type() == hidden.scalar_type()) return torch::matmul(hidden, weight.t());
  auto out = torch::empty({hidden.size(0), weight.size(0)}, hidden.options());
  for (int64_t v = 0; v < weight.size(0); v += kWidenedRows) {
    const int64_t e = std::min(v + kWidenedRows, weight.size(0));
    out.slice(1, v, e).copy_(torch::matmul(hidden, weight.slice(0, v, e).to(hidden.scalar_type()).t()));
  }
  return out;
}

/// dz [n, V] · weight -> [n, H] in dz's dtype (the hidden states' gradient).
torch::Tensor head_gradient(const torch::Tensor& dz, const torch::Tensor& weight) {
  if (weight.scalar_type() == dz.scalar_type()) return torch::matmul(dz, weight);
  auto out = torch::zeros({dz.size(0), weight.size(1)}, dz.options());
  for (int64_t v = 0; v < weight.size(0); v += kWidenedRows) {
    const int64_t e = std::min(v + kWidenedRows, weight.size(0));
    out += torch::matmul(dz.slice(1, v, e), weight.slice(0, v, e).to(dz.scalar_type()));
  }
  return out;
}

/// log-softmax of one chunk's logits, float32: rows [begin, end) of `hidden` through `weight`.
torch::Tensor chunk_log_probs(const torch::Tensor& hidden, const torch::Tensor& weight, int64_t begin, int64_t end) {
  return lm_head_log_probs(hidden.slice(0, begin, end), weight);
}

/// One chunk's KL sum (0-dim float32) and, when asked for, the distribution q [chunk, V] with
/// ∂KL/∂z_s = p_s − q per row (z_s the student's logits).
struct ChunkKl {
  torch::Tensor sum;
  torch::Tensor q;
};

/// The teacher's side of the chunked KL: given the student's log-probabilities of rows
/// [begin, end) and whether q is wanted, that chunk's ChunkKl.
using ChunkTeacher = std::function<ChunkKl(const torch::Tensor& log_s, int64_t begin, int64_t end, bool want_q)>;

/// The custom autograd function behind chunked_token_kl_sum and chunked_top_k_kl_sum (inputs:
/// student hidden, student weight, the teacher's side, chunk, and which gradients are wanted).
/// The loss is linear in its incoming gradient g, so the gradients are computed in the forward
/// pass, while each chunk's probabilities exist (as fused linear cross-entropy kernels do), and
/// backward scales them by g: the LM head runs once per chunk for each model, as the
/// whole-batch path's forward does, instead of again in backward.
struct ChunkedKl : public torch::autograd::Function<ChunkedKl> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hs, const torch::Tensor& ws,
                               const ChunkTeacher& teacher, int64_t chunk, bool hidden_grad, bool weight_grad) {
    auto sum = torch::zeros({}, hs.options().dtype(torch::kFloat));
    torch::Tensor grad_hs = hidden_grad ? torch::empty_like(hs) : torch::Tensor();
    torch::Tensor grad_ws = weight_grad ? torch::zeros_like(ws) : torch::Tensor();
    const bool want_q = hidden_grad || weight_grad;
    for (int64_t b = 0; b < hs.size(0); b += chunk) {
      const int64_t e = std::min(b + chunk, hs.size(0));
      const auto log_s = chunk_log_probs(hs, ws, b, e);
      const auto part = teacher(log_s, b, e, want_q);
      sum += part.sum;
      if (!want_q) continue;
      const auto dz = (log_s.exp() - part.q).to(hs.scalar_type());
      if (hidden_grad) grad_hs.slice(0, b, e).copy_(head_gradient(dz, ws));
      if (weight_grad) grad_ws += torch::matmul(dz.t(), hs.slice(0, b, e));
    }
    ctx->save_for_backward({grad_hs, grad_ws});
    return sum;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const auto g = grad_output[0];
    auto scaled = [&](const torch::Tensor& grad) { return grad.defined() ? grad * g.to(grad.scalar_type()) : grad; };
    return {scaled(saved[0]), scaled(saved[1]), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

/// @throws headprune::Error for a chunk of fewer than 1 token.
void check_chunk(int64_t chunk) {
  if (chunk < 1) throw Error(fmt::format("KL chunk of {} tokens: it must be at least 1", chunk));
}

/// ChunkedKl over `teacher` for student rows `hs` through `student_weight`, gradients as
/// autograd asks for them.
torch::Tensor chunked_kl_sum(const torch::Tensor& hs, const torch::Tensor& student_weight, const ChunkTeacher& teacher,
                             int64_t chunk) {
  check_chunk(chunk);
  const bool grad = torch::GradMode::is_enabled();
  return ChunkedKl::apply(hs, student_weight, teacher, chunk, grad && hs.requires_grad(),
                          grad && student_weight.requires_grad());
}

/// The shape check of the student's side: rows [N, H] and an LM head [V, H].
/// @throws headprune::Error naming `teacher` (the teacher's side, for the message).
void check_student_rows(const torch::Tensor& hs, const torch::Tensor& weight, const std::string& teacher) {
  if (hs.dim() != 2 || weight.dim() != 2 || weight.size(1) != hs.size(1))
    throw Error(fmt::format("chunked KL: student hidden states [{}] need an LM-head weight [vocab, {}], got [{}] (the "
                            "teacher's side: {})",
                            fmt::join(hs.sizes(), ","), hs.size(-1), fmt::join(weight.sizes(), ","), teacher));
}

}  // namespace

torch::Tensor lm_head_log_probs(const torch::Tensor& hidden, const torch::Tensor& weight) {
  return torch::log_softmax(head_product(hidden, weight).to(torch::kFloat), -1);
}

torch::Tensor chunked_token_kl_sum(const torch::Tensor& student_hidden, const torch::Tensor& teacher_hidden,
                                   const ChunkedLmHead& head) {
  const auto& ht = teacher_hidden;
  const auto& wt = head.teacher_weight;
  check_student_rows(student_hidden, head.student_weight,
                     fmt::format("hidden states [{}], LM head [{}]", fmt::join(ht.sizes(), ","), fmt::join(wt.sizes(), ",")));
  if (ht.sizes() != student_hidden.sizes() || wt.sizes() != head.student_weight.sizes())
    throw Error(fmt::format("chunked KL: the teacher's hidden states [{}] and LM head [{}] must match the student's",
                            fmt::join(ht.sizes(), ","), fmt::join(wt.sizes(), ",")));
  const ChunkTeacher teacher = [ht = ht.detach(), wt = wt.detach()](const torch::Tensor& log_s, int64_t b, int64_t e,
                                                                     bool /*want_q*/) {
    const auto log_t = chunk_log_probs(ht, wt, b, e);
    auto p_t = log_t.exp();
    // ∂/∂z_s of Σ_v p_t (log p_t − log_softmax(z_s)) = softmax(z_s) − p_t (Σ_v p_t = 1).
    return ChunkKl{(p_t * (log_t - log_s)).sum(), p_t};
  };
  return chunked_kl_sum(student_hidden, head.student_weight, teacher, head.chunk_tokens);
}

torch::Tensor chunked_top_k_kl_sum(const torch::Tensor& student_hidden, const TopKTarget& target,
                                   const ChunkedLmHead& head) {
  check_student_rows(student_hidden, head.student_weight,
                     fmt::format("top-k target [{}]", fmt::join(target.log_probs.sizes(), ",")));
  if (target.log_probs.dim() != 2 || target.log_probs.size(0) != student_hidden.size(0))
    throw Error(fmt::format("chunked KL: a top-k target [{}] for {} student rows", fmt::join(target.log_probs.sizes(), ","),
                            student_hidden.size(0)));
  const ChunkTeacher teacher = [&target](const torch::Tensor& log_s, int64_t b, int64_t e, bool want_q) {
    const auto rows = target.slice(b, e);
    return ChunkKl{top_k_token_kl(rows, log_s).sum(), want_q ? top_k_gradient_target(rows, log_s) : torch::Tensor()};
  };
  return chunked_kl_sum(student_hidden, head.student_weight, teacher, head.chunk_tokens);
}

TopKTarget chunked_top_k_target(const torch::Tensor& hidden, const torch::Tensor& weight, int64_t chunk, int64_t k) {
  check_chunk(chunk);
  const auto rows = hidden.reshape({-1, hidden.size(-1)});
  if (rows.size(0) == 0) return top_k_target(torch::empty({0, weight.size(0)}), k);
  std::vector<torch::Tensor> log_probs, indices, rest;
  for (int64_t b = 0; b < rows.size(0); b += chunk) {
    auto part = top_k_target(chunk_log_probs(rows, weight, b, std::min(b + chunk, rows.size(0))), k);
    log_probs.push_back(part.log_probs);
    indices.push_back(part.indices);
    rest.push_back(part.rest_log_prob);
  }
  auto lead = hidden.sizes().vec();
  lead.pop_back();
  auto with_k = lead;
  with_k.push_back(log_probs.front().size(-1));
  return {torch::cat(log_probs).reshape(with_k), torch::cat(indices).reshape(with_k), torch::cat(rest).reshape(lead)};
}

int64_t automatic_kl_chunk_tokens(int64_t batch_tokens, int64_t vocab_size) {
  const int64_t row_bytes = std::max<int64_t>(vocab_size, 1) * 4;
  if (batch_tokens * row_bytes <= kWholeBatchLogitsBytes) return 0;
  return std::max<int64_t>(1, kChunkLogitsBytes / row_bytes);
}

std::optional<ChunkedLmHead> chunked_lm_head(const models::AttentionModel& student,
                                             const models::AttentionModel& teacher, int64_t batch_tokens,
                                             int64_t kl_chunk_tokens) {
  const auto weight = student.lm_head_weight();
  if (!weight.defined() && kl_chunk_tokens > 0)
    throw UsageError(fmt::format("--kl-chunk-tokens {}: a '{}' model has no language-model head, so there is no KL "
                                 "over a vocabulary to chunk; leave it out",
                                 kl_chunk_tokens, student.config().model_type));
  if (!weight.defined() || kl_chunk_tokens < 0) return std::nullopt;
  const int64_t chunk = kl_chunk_tokens > 0 ? kl_chunk_tokens : automatic_kl_chunk_tokens(batch_tokens, weight.size(0));
  if (chunk == 0) return std::nullopt;
  return ChunkedLmHead{weight, teacher.lm_head_weight(), chunk};
}

ScopedLogitsOff::ScopedLogitsOff(std::vector<models::AttentionModel*> models, bool off)
    : models_(off ? std::move(models) : std::vector<models::AttentionModel*>{}) {
  for (auto* m : models_) m->set_compute_logits(false);
}

ScopedLogitsOff::~ScopedLogitsOff() {
  for (auto* m : models_) m->set_compute_logits(true);
}

}  // namespace headprune::pruner
