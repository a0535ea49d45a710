// Training with the task's labels: the classifier's cross-entropy to the gold labels, mixed
// with the distillation to the dense model (`--labels`, `--label-weight`).
#pragma once

#include <torch/types.h>

#include "pruner/objectives/distillation.h"

namespace headprune::pruner {

/// CoFi's mix (Xia et al. 2022, scripts: distill_ce_loss_alpha 0.1, distill_layer_loss_alpha
/// 0.9): 0.1 on the prediction term, 0.9 on the layer distillation. headprune's prediction term
/// is the cross-entropy to the gold labels.
inline constexpr double kDefaultLabelWeight = 0.1;

/// Hard-label cross-entropy, in nats per sentence:
///   Σ_b −log softmax(logits_b)[labels_b] / #sentences
/// logits: [B, C] (differentiable); labels: [B] class ids (int64). The sentence count is summed
/// by `global_sum` (a data-parallel job), so the ranks' terms add up to the whole batch's.
torch::Tensor label_cross_entropy(const torch::Tensor& logits, const torch::Tensor& labels,
                                  const GlobalSum& global_sum = {});

/// The labelled objective: total = w · cross_entropy + (1 − w) · distilled.total, with the
/// parts of `distilled` kept for the log and `label` = cross_entropy. w = label_weight in
/// (0, 1]; 1 trains on the labels alone.
DistillationLoss with_label_loss(DistillationLoss distilled, const torch::Tensor& cross_entropy,
                                 double label_weight);

}  // namespace headprune::pruner
