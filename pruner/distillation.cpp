#include "pruner/distillation.h"

#include <torch/torch.h>

namespace headprune::pruner {

DistillationLoss encoder_distillation(const torch::Tensor& student, const torch::Tensor& teacher,
                                      const torch::Tensor& attention_mask,
                                      const models::SentencePooling& pooling,
                                      double embedding_weight) {
  auto t = teacher.detach();
  auto m = attention_mask.to(student.dtype()).unsqueeze(-1);
  auto hidden = ((student - t).pow(2) * m).sum() / (t.pow(2) * m).sum().clamp_min(1e-12);
  auto cos = torch::cosine_similarity(pooling.embed(student, attention_mask),
                                      pooling.embed(t, attention_mask), 1);
  auto embedding = (1 - cos).mean();
  return {hidden + embedding_weight * embedding, hidden, embedding};
}

}  // namespace headprune::pruner
