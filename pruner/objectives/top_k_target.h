// The teacher's next-token distribution kept as its k most probable tokens and one bucket for
// the rest (issue 37, item 2): what the teacher cache holds for a language model when
// --teacher-top-k is set, 8·k + 4 bytes a token instead of 4 · vocabulary (logits) or
// 4 · hidden_size (final hidden states).
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace headprune::pruner {

/// The teacher's distribution over k + 1 outcomes per position: its k most probable tokens, and
/// "any other token" with the remaining probability.
struct TopKTarget {
  torch::Tensor log_probs;      ///< [..., k] float32: log p_t of the k tokens, most probable first
  torch::Tensor indices;        ///< [..., k] int32: their token ids
  torch::Tensor rest_log_prob;  ///< [...] float32: log Σ_{v ∉ top-k} p_t(v), by logsumexp (finite)

  /// The positions selected by `rows` (a bool mask over the flattened leading dimensions [N]):
  /// a target of [n, k], [n, k], [n].
  TopKTarget select(const torch::Tensor& rows) const;
  /// Positions [begin, end) of a target of rows [N, k].
  TopKTarget slice(int64_t begin, int64_t end) const;
  /// Bytes its tensors hold.
  int64_t bytes() const;
};

/// The k most probable tokens of each position of `log_probs` ([..., V] log-probabilities,
/// e.g. log_softmax of logits; any float dtype, kept as float32) and the rest's log-probability.
/// k is capped at V − 1 so that the rest is never empty: with k = V − 1 the bucket holds one
/// token and top_k_token_kl equals the full KL (merging outcomes loses nothing when the bucket
/// has one token).
/// @throws headprune::Error for k < 1 or V < 2.
TopKTarget top_k_target(const torch::Tensor& log_probs, int64_t k);

/// Per position, the KL between the teacher's and the student's distributions over the same
/// k + 1 outcomes (the top-k tokens, then the bucket):
///   KL_k = Σ_{v ∈ K} p_t(v) (log p_t(v) − log p_s(v)) + r_t (log r_t − log r_s),
/// r = 1 − Σ_{v ∈ K} p, computed as logsumexp over the other tokens. By the data-processing
/// inequality KL_k ≤ the full KL (Cover & Thomas, Elements of Information Theory, 2nd ed.,
/// §2.8); they are equal when the teacher's tail is proportional to the student's. This is
/// cached top-k distillation with the rest folded into one outcome; Anshumann et al. 2025
/// ("Sparse Logit Sampling", ACL 2025, §3) show its gradient is biased against full
/// distillation, which is why --teacher-top-k is opt-in. In nats.
/// log_student: [..., V] log-probabilities (differentiable); target of the same leading
/// shape. Returns [...].
torch::Tensor top_k_token_kl(const TopKTarget& target, const torch::Tensor& log_student);

/// The distribution q [..., V] with ∂KL_k/∂z_s = p_s − q, z_s the student's logits
/// (log_student = log_softmax(z_s)): q(v) = p_t(v) on the top-k tokens and
/// r_t · p_s(v) / r_s on the others. With the whole teacher distribution q = p_t.
torch::Tensor top_k_gradient_target(const TopKTarget& target, const torch::Tensor& log_student);

}  // namespace headprune::pruner
