#include "pruner/measure/fidelity.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/training/corpus.h"
#include "pruner/training/distillation.h"

namespace headprune::pruner {

nlohmann::json Fidelity::to_json() const {
  nlohmann::json j = {{"sequences", sequences},   {"mean_cosine", mean_cosine}, {"p5_cosine", p5_cosine},
                      {"min_cosine", min_cosine}, {"hidden_mse", hidden_mse}};
  if (has_lm) {
    j["kl"] = kl;
    j["teacher_perplexity"] = teacher_perplexity;
    j["student_perplexity"] = student_perplexity;
  }
  return j;
}

std::string Fidelity::describe() const {
  auto s = fmt::format("{} held-out sequences: embedding cosine mean {:.4f}, 5th percentile "
                       "{:.4f}, min {:.4f}; hidden-state MSE {:.4g}",
                       sequences, mean_cosine, p5_cosine, min_cosine, hidden_mse);
  if (has_lm)
    s += fmt::format("; KL(dense || pruned) {:.5f} nats/token; perplexity {:.3f} (dense {:.3f})",
                     kl, student_perplexity, teacher_perplexity);
  return s;
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
  bool has_lm = false;
  double kl_sum = 0, kl_tokens = 0, nll_student = 0, nll_teacher = 0, next_tokens = 0;
  for (const auto& bucket : length_buckets(sequences, batch_size)) {
    auto in = make_inputs(sequences, bucket, pad_id, device);
    auto out_s = student.forward(in, student_multipliers);
    auto out_t = teacher.forward(in, nullptr);
    const auto& hs = out_s.last_hidden_state;
    const auto& ht = out_t.last_hidden_state;
    if (out_s.logits.defined() && out_t.logits.defined()) {
      has_lm = true;
      auto mask = in.attention_mask.to(torch::kFloat);
      auto log_s = torch::log_softmax(out_s.logits.to(torch::kFloat), -1);
      auto log_t = torch::log_softmax(out_t.logits.to(torch::kFloat), -1);
      kl_sum += (token_kl(log_t, log_s) * mask).sum().item<double>();
      kl_tokens += mask.sum().item<double>();
      // Next-token NLL: position t predicts token t+1 where both are real.
      const auto T = in.input_ids.size(1);
      if (T > 1) {
        auto next = in.input_ids.slice(1, 1, T).unsqueeze(-1);
        auto both = mask.slice(1, 0, T - 1) * mask.slice(1, 1, T);
        auto nll = [&](const torch::Tensor& log_p) {
          return -(log_p.slice(1, 0, T - 1).gather(-1, next).squeeze(-1) * both).sum().item<double>();
        };
        nll_student += nll(log_s);
        nll_teacher += nll(log_t);
        next_tokens += both.sum().item<double>();
      }
    }
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
  f.has_lm = has_lm;
  if (has_lm) {
    f.kl = kl_sum / std::max(kl_tokens, 1.0);
    f.student_perplexity = std::exp(nll_student / std::max(next_tokens, 1.0));
    f.teacher_perplexity = std::exp(nll_teacher / std::max(next_tokens, 1.0));
  }
  return f;
}

}  // namespace headprune::pruner
