#include "pruner/measure/fidelity.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/objectives/chunked_kl.h"
#include "pruner/objectives/distillation.h"
#include "pruner/text/corpus.h"

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

namespace {

/// The language-model part of the comparison, summed over batches.
struct LmSums {
  double kl = 0, tokens = 0, nll_student = 0, nll_teacher = 0, next_tokens = 0;
};

/// Adds one batch's KL(teacher ‖ student) of every real token and the next-token NLL of both
/// models (position t predicts token t+1 where both are real) to `sums`, from the final hidden
/// states hs, ht [B, T, H] through the models' LM heads, `chunk` rows at a time (0 = automatic,
/// as in training: automatic_kl_chunk_tokens).
void add_lm_sums(const torch::Tensor& hs, const torch::Tensor& ht, const torch::Tensor& student_head,
                 const torch::Tensor& teacher_head, const models::ModelInputs& in, int64_t chunk, LmSums& sums) {
  const auto mask = in.attention_mask.to(torch::kFloat);
  const int64_t T = in.input_ids.size(1);
  // Per position: the next token and whether it counts (both real; never the last position).
  auto next = torch::zeros_like(in.input_ids);
  auto both = torch::zeros_like(mask);
  if (T > 1) {
    next.slice(1, 0, T - 1).copy_(in.input_ids.slice(1, 1, T));
    both.slice(1, 0, T - 1).copy_(mask.slice(1, 0, T - 1) * mask.slice(1, 1, T));
  }
  const auto real = in.attention_mask.reshape({-1}).to(torch::kBool);
  auto rows = [&](const torch::Tensor& x) { return x.reshape({real.size(0), -1}).index({real}); };
  const auto hs_rows = rows(hs), ht_rows = rows(ht), next_rows = rows(next), both_rows = rows(both).squeeze(-1);
  const int64_t n = hs_rows.size(0);
  if (chunk == 0) chunk = automatic_kl_chunk_tokens(n, student_head.size(0));
  if (chunk == 0) chunk = std::max<int64_t>(n, 1);
  for (int64_t b = 0; b < n; b += chunk) {
    const int64_t e = std::min(b + chunk, n);
    const auto log_s = lm_head_log_probs(hs_rows.slice(0, b, e), student_head);
    const auto log_t = lm_head_log_probs(ht_rows.slice(0, b, e), teacher_head);
    sums.kl += token_kl(log_t, log_s).sum().item<double>();
    const auto ids = next_rows.slice(0, b, e), weight = both_rows.slice(0, b, e);
    auto nll = [&](const torch::Tensor& log_p) { return -(log_p.gather(-1, ids).squeeze(-1) * weight).sum().item<double>(); };
    sums.nll_student += nll(log_s);
    sums.nll_teacher += nll(log_t);
  }
  sums.tokens += static_cast<double>(n);
  sums.next_tokens += both.sum().item<double>();
}

}  // namespace

Fidelity measure_fidelity(models::AttentionModel& student,
                          const models::Multipliers& student_multipliers,
                          models::AttentionModel& teacher,
                          const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id,
                          const models::SentencePooling& pooling, std::size_t batch_size,
                          const torch::Device& device, int64_t chunk_tokens) {
  if (sequences.empty()) throw Error("no held-out sequences to measure fidelity on");
  if (student.config().hidden_size != teacher.config().hidden_size)
    throw Error("student and teacher have different hidden sizes");
  if (chunk_tokens < 0) throw Error(fmt::format("fidelity in chunks of {} tokens: give 0 (automatic) or more", chunk_tokens));
  torch::NoGradGuard no_grad;
  const auto student_head = student.lm_head_weight(), teacher_head = teacher.lm_head_weight();
  const bool has_lm = student_head.defined() && teacher_head.defined();
  const ScopedLogitsOff logits_off({&student, &teacher}, has_lm);  // the LM heads run a chunk at a time
  std::vector<double> cosines;
  double squared_error = 0, elements = 0;
  LmSums lm;
  for (const auto& bucket : length_buckets(sequences, batch_size)) {
    auto in = make_inputs(sequences, bucket, pad_id, device);
    const auto hs = student.forward(in, student_multipliers).last_hidden_state;
    const auto ht = teacher.forward(in, nullptr).last_hidden_state;
    if (has_lm) add_lm_sums(hs, ht, student_head, teacher_head, in, chunk_tokens, lm);
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
    f.kl = lm.kl / std::max(lm.tokens, 1.0);
    f.student_perplexity = std::exp(lm.nll_student / std::max(lm.next_tokens, 1.0));
    f.teacher_perplexity = std::exp(lm.nll_teacher / std::max(lm.next_tokens, 1.0));
  }
  return f;
}

}  // namespace headprune::pruner
