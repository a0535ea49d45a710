#include "pruner/fidelity.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/corpus.h"

namespace headprune::pruner {

nlohmann::json Fidelity::to_json() const {
  return {{"sequences", sequences},   {"mean_cosine", mean_cosine}, {"p5_cosine", p5_cosine},
          {"min_cosine", min_cosine}, {"hidden_mse", hidden_mse}};
}

Fidelity measure_fidelity(models::AttentionModel& student,
                          const models::HeadMultipliers* student_multipliers,
                          models::AttentionModel& teacher,
                          const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id,
                          const models::SentencePooling& pooling, std::size_t batch_size,
                          const torch::Device& device) {
  if (sequences.empty()) throw Error("no held-out sequences to measure fidelity on");
  if (student.config().hidden_size != teacher.config().hidden_size)
    throw Error("student and teacher have different hidden sizes");
  torch::NoGradGuard no_grad;
  std::vector<double> cosines;
  double squared_error = 0, elements = 0;
  for (const auto& bucket : length_buckets(sequences, batch_size)) {
    auto in = make_inputs(sequences, bucket, pad_id, device);
    auto hs = student.forward(in, student_multipliers).last_hidden_state;
    auto ht = teacher.forward(in, nullptr).last_hidden_state;
    auto m = in.attention_mask.to(hs.dtype()).unsqueeze(-1);
    squared_error += ((hs - ht).pow(2) * m).sum().item<double>();
    elements += m.sum().item<double>() * static_cast<double>(hs.size(-1));
    auto cos = torch::cosine_similarity(pooling.embed(hs, in.attention_mask),
                                        pooling.embed(ht, in.attention_mask), 1)
                   .to(torch::kCPU, torch::kDouble)
                   .contiguous();
    cosines.insert(cosines.end(), cos.data_ptr<double>(), cos.data_ptr<double>() + cos.numel());
  }
  Fidelity f;
  f.sequences = cosines.size();
  std::sort(cosines.begin(), cosines.end());
  double total = 0;
  for (auto c : cosines) total += c;
  f.mean_cosine = total / static_cast<double>(cosines.size());
  f.p5_cosine = cosines[static_cast<size_t>(std::floor(0.05 * static_cast<double>(cosines.size() - 1)))];
  f.min_cosine = cosines.front();
  f.hidden_mse = squared_error / std::max(elements, 1.0);
  return f;
}

}  // namespace headprune::pruner
