// KL distillation of a language model without its full logits: the LM head is applied a chunk
// of tokens at a time, its gradient taken while the chunk exists (issue 37, item 2).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "models/attention_model.h"
#include "pruner/objectives/top_k_target.h"

namespace headprune::pruner {

/// The LM heads of the distillation: logits = hidden · weightᵀ (no bias: no modelled family has
/// one), and how many tokens' logits exist at a time.
struct ChunkedLmHead {
  torch::Tensor student_weight;  ///< [vocab, hidden_size]; may require grad (--train-weights)
  torch::Tensor teacher_weight;  ///< [vocab, hidden_size]; frozen
  int64_t chunk_tokens = 0;      ///< >= 1
};

/// Σ_n KL(p_t,n ‖ p_s,n) = Σ_n Σ_v p_t(v) (log p_t(v) − log p_s(v)) in nats, with
/// p_s,n = softmax(student_hidden[n] · student_weightᵀ) and p_t,n likewise for the teacher,
/// evaluated `head.chunk_tokens` rows at a time in float32 (Hinton et al. 2015 at temperature 1;
/// the same per-token quantity as pruner::token_kl). Only one chunk's [chunk, vocab] logits
/// exist at a time: while they do, the gradient ∂KL/∂z_s = p_s − p_t per row is taken on to
/// student_hidden (and student_weight when it requires grad) and kept, [N, hidden_size]; the
/// backward pass scales it by the incoming gradient (the loss is linear in it). So autograd
/// keeps no [tokens, vocab] tensor and the LM heads run once per chunk, as in the whole-batch
/// forward. Peak extra memory: about 4 · chunk · vocab floats.
/// student_hidden, teacher_hidden: [N, hidden_size] (the real tokens only); the teacher's carry
/// no gradient. Returns a 0-dim float32 tensor.
/// @throws headprune::Error on mismatched shapes or chunk_tokens < 1.
torch::Tensor chunked_token_kl_sum(const torch::Tensor& student_hidden, const torch::Tensor& teacher_hidden,
                                   const ChunkedLmHead& head);

/// chunked_token_kl_sum's loss with the teacher's side a top-k target instead (top_k_token_kl
/// summed over the rows): target rows [N, k] (TopKTarget::select of the real tokens);
/// head.teacher_weight is not used. The gradient per row is p_s − q (top_k_gradient_target),
/// taken in the forward pass as there.
/// @throws headprune::Error on mismatched shapes or chunk_tokens < 1.
torch::Tensor chunked_top_k_kl_sum(const torch::Tensor& student_hidden, const TopKTarget& target,
                                   const ChunkedLmHead& head);

/// top_k_target of the distributions `hidden` [..., H] gives through the LM head `weight`
/// [V, H], `chunk` positions' logits at a time (float32; a narrower weight is widened in
/// blocks as in the KL). Returns a target of leading shape [...].
/// @throws headprune::Error for chunk < 1 or as top_k_target.
TopKTarget chunked_top_k_target(const torch::Tensor& hidden, const torch::Tensor& weight, int64_t chunk, int64_t k);

/// log_softmax(hidden · weightᵀ) in float32: hidden [n, H] rows, weight [V, H] (a narrower weight is
/// widened 8,192 rows at a time, not as a whole). Returns [n, V].
torch::Tensor lm_head_log_probs(const torch::Tensor& hidden, const torch::Tensor& weight);

/// Tokens per chunk when the user leaves it to headprune: whole batches while their logits
/// ([tokens, vocab] float32) take at most kWholeBatchLogitsBytes (no recomputation, as before
/// chunking existed), else chunks whose logits take about kChunkLogitsBytes. 0 = whole batch.
int64_t automatic_kl_chunk_tokens(int64_t batch_tokens, int64_t vocab_size);

/// The chunked LM head of a distillation run, or nullopt when the KL should use the models'
/// own logits: a model without an LM head, `kl_chunk_tokens` -1, or 0 (automatic) with
/// batches of at most `batch_tokens` tokens small enough (automatic_kl_chunk_tokens).
/// @throws headprune::UsageError for kl_chunk_tokens > 0 on a model without an LM head.
std::optional<ChunkedLmHead> chunked_lm_head(const models::AttentionModel& student,
                                             const models::AttentionModel& teacher, int64_t batch_tokens,
                                             int64_t kl_chunk_tokens);

/// Turns the logits of `models` off for its lifetime when `off` (their forward passes then
/// give last_hidden_state alone), and back on after.
class ScopedLogitsOff {
 public:
  ScopedLogitsOff(std::vector<models::AttentionModel*> models, bool off);
  ~ScopedLogitsOff();
  ScopedLogitsOff(const ScopedLogitsOff&) = delete;
  ScopedLogitsOff& operator=(const ScopedLogitsOff&) = delete;

 private:
  std::vector<models::AttentionModel*> models_;
};

/// Above this many bytes of one batch's float32 logits, automatic_kl_chunk_tokens chunks (1 GiB).
/// The trade (docs/results.md, SmolLM2 at 32 x 128, 768 MiB of logits): chunks take the step's
/// peak from +10.4 to +5.7 GB but cost 7% (teacher run) to 22% (teacher cached: its LM head runs
/// again) of step time, so batches up to this size keep the whole-batch path's speed.
inline constexpr int64_t kWholeBatchLogitsBytes = int64_t{1} << 30;
/// The logits of one chunk, when chunking (64 MiB: 130 tokens of a 128,256-token vocabulary).
inline constexpr int64_t kChunkLogitsBytes = int64_t{64} << 20;

}  // namespace headprune::pruner
