#include "pruner/objectives/task_loss.h"

#include <torch/torch.h>

namespace headprune::pruner {

torch::Tensor label_cross_entropy(const torch::Tensor& logits, const torch::Tensor& labels,
                                  const GlobalSum& global_sum) {
  const auto log_p = torch::log_softmax(logits.to(torch::kFloat), -1);
  const auto nll = -log_p.gather(1, labels.to(torch::kLong).unsqueeze(1)).squeeze(1);
  auto sentences = torch::full({}, static_cast<double>(nll.size(0)), nll.options());
  if (global_sum) sentences = global_sum(sentences);
  return nll.sum() / sentences.clamp_min(1);
}

DistillationLoss with_label_loss(DistillationLoss distilled, const torch::Tensor& cross_entropy,
                                 double label_weight) {
  distilled.total = label_weight * cross_entropy + (1 - label_weight) * distilled.total;
  distilled.label = cross_entropy;
  return distilled;
}

}  // namespace headprune::pruner
