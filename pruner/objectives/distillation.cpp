#include "pruner/objectives/distillation.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::pruner {
namespace {

/// `statistic` summed over the ranks (itself in a single process), without gradient.
torch::Tensor over_ranks(const torch::Tensor& statistic, const GlobalSum& global_sum) {
  return global_sum ? global_sum(statistic.detach()) : statistic.detach();
}

/// Σ_real per_token / #real tokens (summed over the ranks): per_token [B, T], attention_mask [B, T].
torch::Tensor mean_over_real_tokens(const torch::Tensor& per_token, const torch::Tensor& attention_mask,
                                    const GlobalSum& global_sum) {
  const auto m = attention_mask.to(per_token.dtype());
  return (per_token * m).sum() / over_ranks(m.sum(), global_sum).clamp_min(1);
}

/// A DistillationLoss whose total is `kl`.
DistillationLoss kl_loss(const torch::Tensor& kl) {
  DistillationLoss loss;
  loss.kl = kl;
  loss.total = kl;
  return loss;
}

/// The chunked KL of the real tokens: `kl_sum(real)` (real: [B·T] bool of attention_mask) over the
/// real tokens' count, summed over the ranks.
DistillationLoss chunked_kl_loss(const torch::Tensor& attention_mask, const GlobalSum& global_sum,
                                 const std::function<torch::Tensor(const torch::Tensor& real)>& kl_sum) {
  const auto real = attention_mask.reshape({-1}).to(torch::kBool);
  const auto count = real.sum().to(torch::kFloat);
  return kl_loss(kl_sum(real) / over_ranks(count, global_sum).clamp_min(1));
}

/// The real rows [n, H] of hidden states [B, T, H].
torch::Tensor real_rows(const torch::Tensor& hidden, const torch::Tensor& real) {
  return hidden.reshape({-1, hidden.size(-1)}).index({real});
}

}  // namespace

nlohmann::json DistillationLoss::parts() const {
  nlohmann::json j = nlohmann::json::object();
  if (hidden.defined()) j["hidden_loss"] = hidden.item<double>();
  if (embedding.defined()) j["embedding_loss"] = embedding.item<double>();
  if (kl.defined()) j["kl"] = kl.item<double>();
  if (label.defined()) j["label_loss"] = label.item<double>();
  if (layers.defined()) j["layer_loss"] = layers.item<double>();
  return j;
}

std::string DistillationLoss::describe() const {
  const auto rest = (layers.defined() ? fmt::format(", layers {:.5f}", layers.item<double>()) : std::string()) +
                    (label.defined() ? fmt::format(", labels {:.5f}", label.item<double>()) : std::string());
  if (kl.defined()) return fmt::format("kl {:.5f}{}", kl.item<double>(), rest);
  return fmt::format("hidden {:.5f}, emb {:.5f}{}", hidden.item<double>(), embedding.item<double>(), rest);
}

DistillationLoss encoder_distillation(const torch::Tensor& student, const torch::Tensor& teacher,
                                      const torch::Tensor& attention_mask,
                                      const models::SentencePooling& pooling,
                                      double embedding_weight, const GlobalSum& global_sum) {
  auto t = teacher.detach();
  auto m = attention_mask.to(student.dtype()).unsqueeze(-1);
  const auto teacher_energy = over_ranks((t.pow(2) * m).sum(), global_sum);
  auto hidden = ((student - t).pow(2) * m).sum() / teacher_energy.clamp_min(1e-12);
  auto cos = torch::cosine_similarity(pooling.embed(student, attention_mask),
                                      pooling.embed(t, attention_mask), 1);
  const auto sentences = torch::full({}, static_cast<double>(cos.size(0)), cos.options());
  auto embedding = (1 - cos).sum() / over_ranks(sentences, global_sum).clamp_min(1);
  DistillationLoss loss;
  loss.total = hidden + embedding_weight * embedding;
  loss.hidden = hidden;
  loss.embedding = embedding;
  return loss;
}

DistillationLoss causal_lm_distillation(const torch::Tensor& student_logits,
                                        const torch::Tensor& teacher_logits,
                                        const torch::Tensor& attention_mask,
                                        const GlobalSum& global_sum) {
  auto per_token = token_kl(torch::log_softmax(teacher_logits.detach().to(torch::kFloat), -1),
                            torch::log_softmax(student_logits.to(torch::kFloat), -1));
  return kl_loss(mean_over_real_tokens(per_token, attention_mask, global_sum));
}

DistillationLoss causal_lm_top_k_distillation(const torch::Tensor& student_logits, const TopKTarget& target,
                                              const torch::Tensor& attention_mask, const GlobalSum& global_sum) {
  const auto per_token = top_k_token_kl(target, torch::log_softmax(student_logits.to(torch::kFloat), -1));
  return kl_loss(mean_over_real_tokens(per_token, attention_mask, global_sum));
}

DistillationLoss chunked_causal_lm_distillation(const torch::Tensor& student_hidden,
                                                const torch::Tensor& teacher_hidden,
                                                const torch::Tensor& attention_mask, const ChunkedLmHead& head,
                                                const GlobalSum& global_sum) {
  return chunked_kl_loss(attention_mask, global_sum, [&](const torch::Tensor& real) {
    return chunked_token_kl_sum(real_rows(student_hidden, real), real_rows(teacher_hidden.detach(), real), head);
  });
}

DistillationLoss chunked_causal_lm_top_k_distillation(const torch::Tensor& student_hidden, const TopKTarget& target,
                                                      const torch::Tensor& attention_mask, const ChunkedLmHead& head,
                                                      const GlobalSum& global_sum) {
  return chunked_kl_loss(attention_mask, global_sum, [&](const torch::Tensor& real) {
    return chunked_top_k_kl_sum(real_rows(student_hidden, real), target.select(real), head);
  });
}

torch::Tensor layer_distillation(const std::vector<torch::Tensor>& student, const std::vector<torch::Tensor>& teacher,
                                 const torch::Tensor& attention_mask, const GlobalSum& global_sum) {
  if (student.empty() || student.size() != teacher.size())
    throw Error(fmt::format("layer-wise distillation: the student gave {} layers' hidden states, the teacher {}",
                            student.size(), teacher.size()));
  const auto m = attention_mask.to(student.front().dtype()).unsqueeze(-1);
  auto sum = torch::zeros({}, student.front().options());
  for (std::size_t l = 0; l < student.size(); ++l) {
    const auto t = teacher[l].detach();
    const auto energy = over_ranks((t.pow(2) * m).sum(), global_sum);
    sum = sum + ((student[l] - t).pow(2) * m).sum() / energy.clamp_min(1e-12);
  }
  return sum / static_cast<double>(student.size());
}

DistillationLoss with_layer_loss(DistillationLoss loss, const torch::Tensor& layers, double weight) {
  loss.total = loss.total + weight * layers;
  loss.layers = layers;
  return loss;
}

torch::Tensor token_kl(const torch::Tensor& log_teacher, const torch::Tensor& log_student) {
  return (log_teacher.exp() * (log_teacher - log_student)).sum(-1);
}

torch::Tensor distillation_target(const models::ModelOutput& teacher) {
  return teacher.logits.defined() ? teacher.logits : teacher.last_hidden_state;
}

std::vector<torch::Tensor> distilled_layers(const std::vector<torch::Tensor>& hidden_states) {
  if (hidden_states.empty()) return {};
  return {hidden_states.begin(), hidden_states.end() - 1};
}

int64_t TeacherTargets::bytes() const {
  int64_t n = top_k ? top_k->bytes() : 0;
  if (output.defined()) n += static_cast<int64_t>(output.nbytes());
  for (const auto& l : layers) n += static_cast<int64_t>(l.nbytes());
  return n;
}

TeacherTargets teacher_targets(const models::ModelOutput& teacher, int64_t top_k, const ChunkedLmHead* chunked) {
  TeacherTargets out;
  out.layers = distilled_layers(teacher.hidden_states);
  if (top_k <= 0) {
    out.output = distillation_target(teacher);
  } else if (chunked) {
    out.top_k = chunked_top_k_target(teacher.last_hidden_state, chunked->teacher_weight, chunked->chunk_tokens, top_k);
  } else if (teacher.logits.defined()) {
    out.top_k = top_k_target(torch::log_softmax(teacher.logits.to(torch::kFloat), -1), top_k);
  } else {
    throw Error(fmt::format("a top-{} teacher target needs next-token logits; this model gives none", top_k));
  }
  return out;
}

DistillationLoss distillation(const models::ModelOutput& student, const torch::Tensor& teacher_target,
                              const torch::Tensor& attention_mask,
                              const models::SentencePooling& pooling, double embedding_weight,
                              const GlobalSum& global_sum, const ChunkedLmHead* chunked) {
  if (chunked)
    return chunked_causal_lm_distillation(student.last_hidden_state, teacher_target, attention_mask, *chunked,
                                          global_sum);
  if (student.logits.defined())
    return causal_lm_distillation(student.logits, teacher_target, attention_mask, global_sum);
  return encoder_distillation(student.last_hidden_state, teacher_target, attention_mask, pooling,
                              embedding_weight, global_sum);
}

DistillationLoss distillation(const models::ModelOutput& student, const TeacherTargets& targets,
                              const torch::Tensor& attention_mask, const models::SentencePooling& pooling,
                              double embedding_weight, const GlobalSum& global_sum, const ChunkedLmHead* chunked) {
  if (!targets.top_k)
    return distillation(student, targets.output, attention_mask, pooling, embedding_weight, global_sum, chunked);
  if (chunked)
    return chunked_causal_lm_top_k_distillation(student.last_hidden_state, *targets.top_k, attention_mask, *chunked,
                                                global_sum);
  return causal_lm_top_k_distillation(student.logits, *targets.top_k, attention_mask, global_sum);
}

}  // namespace headprune::pruner
