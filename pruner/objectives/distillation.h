// Self-distillation objectives: the gated student should compute what the dense teacher does.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/attention_model.h"
#include "models/sentence_pooling.h"
#include "pruner/objectives/chunked_kl.h"
#include "pruner/objectives/top_k_target.h"

namespace headprune::pruner {

/// Loss parts of one batch (0-dim tensors; `total` is differentiable). Encoders fill `hidden`
/// and `embedding`, language models `kl`, labelled training also `label`
/// (pruner/objectives/task_loss.h); the others stay undefined.
struct DistillationLoss {
  torch::Tensor total;
  torch::Tensor hidden;     ///< relative squared error of the final hidden states
  torch::Tensor embedding;  ///< mean (1 − cosine) of the pooled sentence embeddings
  torch::Tensor kl;         ///< mean KL(teacher ‖ student) of next-token distributions, nats/token
  torch::Tensor label;      ///< mean cross-entropy of the classifier to the gold labels, nats
  torch::Tensor layers;     ///< layer-wise distillation (layer_distillation), with --distill-layers
  /// The defined parts by name ("hidden_loss", "embedding_loss", "kl", "label_loss",
  /// "layer_loss"), for logs.
  nlohmann::json parts() const;
  /// "hidden 0.01234, emb 0.00567" or "kl 0.01234", then ", layers 0.00891" and
  /// ", labels 0.34567" when those parts are in.
  std::string describe() const;
};

/// The sum of a (gradient-free) batch statistic over every rank of a data-parallel job
/// (ProcessGroup::summed); empty = this process holds the whole batch. The objectives divide by
/// such global sums, so the ranks' losses add up to the loss of the whole batch and summed
/// gradients equal one process's.
using GlobalSum = std::function<torch::Tensor(const torch::Tensor&)>;

/// Encoder objective (no labels):
///   hidden    = Σ_real ||h_s − h_t||² / Σ_real ||h_t||²   over real (unpadded) tokens; scale-free
///   embedding = mean_b (1 − cos(pool(h_s)_b, pool(h_t)_b))   with the model's own pooling
///   total     = hidden + embedding_weight · embedding
/// student, teacher: [B, T, H]; attention_mask: [B, T]. The teacher carries no gradient. The
/// denominators (Σ_real ||h_t||², the number of sentences) are summed by `global_sum`.
DistillationLoss encoder_distillation(const torch::Tensor& student, const torch::Tensor& teacher,
                                      const torch::Tensor& attention_mask,
                                      const models::SentencePooling& pooling,
                                      double embedding_weight, const GlobalSum& global_sum = {});

/// Language-model objective (Hinton et al. 2015 at temperature 1; the KD loss of MiniLLM /
/// Sheared-LLaMA's continued pre-training with the dense model as teacher):
///   kl = Σ_real Σ_v p_t(v) (log p_t(v) − log p_s(v)) / #real tokens
/// student_logits, teacher_logits: [B, T, V]; attention_mask: [B, T]. total = kl. The token
/// count is summed by `global_sum`.
DistillationLoss causal_lm_distillation(const torch::Tensor& student_logits,
                                        const torch::Tensor& teacher_logits,
                                        const torch::Tensor& attention_mask,
                                        const GlobalSum& global_sum = {});

/// causal_lm_distillation from the final hidden states [B, T, H] (student with gradient,
/// teacher frozen) through `head`'s LM-head weights, a chunk of real tokens at a time
/// (chunked_token_kl_sum): the same kl without any [B, T, vocab] logits.
DistillationLoss chunked_causal_lm_distillation(const torch::Tensor& student_hidden,
                                                const torch::Tensor& teacher_hidden,
                                                const torch::Tensor& attention_mask, const ChunkedLmHead& head,
                                                const GlobalSum& global_sum = {});

/// causal_lm_distillation against the teacher's top-k distribution (top_k_token_kl) instead of
/// its logits: kl = Σ_real KL_k / #real tokens. student_logits [B, T, V]; target of leading shape
/// [B, T]; attention_mask [B, T].
DistillationLoss causal_lm_top_k_distillation(const torch::Tensor& student_logits, const TopKTarget& target,
                                              const torch::Tensor& attention_mask, const GlobalSum& global_sum = {});

/// chunked_causal_lm_distillation against the teacher's top-k distribution (target of leading
/// shape [B, T]; chunked_top_k_kl_sum): the same kl as causal_lm_top_k_distillation.
DistillationLoss chunked_causal_lm_top_k_distillation(const torch::Tensor& student_hidden, const TopKTarget& target,
                                                      const torch::Tensor& attention_mask, const ChunkedLmHead& head,
                                                      const GlobalSum& global_sum = {});

/// CoFi's layer-wise distillation (Xia et al. 2022, "Structured Pruning Learns Compact and
/// Accurate Models", §3.3, L_layer) with each student layer matched to the same teacher layer
/// (the pruned model keeps every layer, so no learned map or layer search is needed), as a
/// scale-free relative squared error averaged over the layers:
///   layers = (1/L) Σ_l Σ_real ||h_s^l − h_t^l||² / Σ_real ||h_t^l||²
/// student, teacher: per layer [B, T, H] (same count L ≥ 1; the teacher's carry no gradient);
/// attention_mask [B, T]. The denominators are summed by `global_sum`.
/// @throws headprune::Error if the layer counts differ or are 0.
torch::Tensor layer_distillation(const std::vector<torch::Tensor>& student, const std::vector<torch::Tensor>& teacher,
                                 const torch::Tensor& attention_mask, const GlobalSum& global_sum = {});

/// `loss` with `layers` (layer_distillation) added to its total with weight `weight` (> 0),
/// and kept as its `layers` part.
DistillationLoss with_layer_loss(DistillationLoss loss, const torch::Tensor& layers, double weight);

/// Per-position KL(p_t ‖ p_s) = Σ_v p_t(v) (log p_t(v) − log p_s(v)), in nats.
/// log_teacher, log_student: log-probabilities [B, T, V] -> [B, T].
torch::Tensor token_kl(const torch::Tensor& log_teacher, const torch::Tensor& log_student);

/// What the teacher contributes to the objective: its logits for a model with an LM head,
/// else its final hidden states.
torch::Tensor distillation_target(const models::ModelOutput& teacher);

/// What a training step distils from the teacher, as the teacher cache keeps it.
struct TeacherTargets {
  torch::Tensor output;               ///< distillation_target(teacher); undefined when top_k is set
  std::optional<TopKTarget> top_k;    ///< the next-token distributions' top k, [B, T] positions (--teacher-top-k)
  std::vector<torch::Tensor> layers;  ///< distilled_layers of its hidden states (--distill-layers), else empty
  /// Bytes its tensors hold.
  int64_t bytes() const;
};

/// The teacher's outputs a step needs: distillation_target(teacher), or with `top_k` > 0 (a
/// language model) its top_k_target instead, from its logits or, when `chunked` is given (logits
/// off), from its last_hidden_state through chunked->teacher_weight a chunk at a time; then, when
/// the teacher ran with output_hidden_states, the layers layer_distillation matches.
/// @throws headprune::Error for top_k > 0 on a model without logits and no chunked head.
TeacherTargets teacher_targets(const models::ModelOutput& teacher, int64_t top_k = 0,
                               const ChunkedLmHead* chunked = nullptr);

/// The layers layer-wise distillation matches: every layer's output but the last, which the
/// main objective already matches (its hidden states, or the logits made from them).
std::vector<torch::Tensor> distilled_layers(const std::vector<torch::Tensor>& hidden_states);

/// The model's objective: chunked_causal_lm_distillation when `chunked` is given (the models'
/// logits then off: teacher_target is the teacher's last_hidden_state), causal_lm_distillation
/// when `student` has logits, else encoder_distillation. `teacher_target` comes from
/// distillation_target().
DistillationLoss distillation(const models::ModelOutput& student, const torch::Tensor& teacher_target,
                              const torch::Tensor& attention_mask,
                              const models::SentencePooling& pooling, double embedding_weight,
                              const GlobalSum& global_sum = {}, const ChunkedLmHead* chunked = nullptr);

/// distillation() against teacher_targets(): with a top-k target, causal_lm_top_k_distillation
/// or, when `chunked` is given, chunked_causal_lm_top_k_distillation; else distillation() against
/// targets.output. The layers are not included (with_layer_loss).
DistillationLoss distillation(const models::ModelOutput& student, const TeacherTargets& targets,
                              const torch::Tensor& attention_mask, const models::SentencePooling& pooling,
                              double embedding_weight, const GlobalSum& global_sum = {},
                              const ChunkedLmHead* chunked = nullptr);

}  // namespace headprune::pruner
