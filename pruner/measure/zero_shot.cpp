#include "pruner/measure/zero_shot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/log.h"
#include "pruner/objectives/chunked_kl.h"

namespace headprune::pruner {
namespace {



/// One answer to score: the ids of context + continuation and where the continuation starts.
struct Request {
  std::size_t question = 0, choice = 0;
  std::vector<int64_t> ids;
  int64_t context_tokens = 0;
};

/// Python's len() of a UTF-8 string: its code points (bytes that do not continue a sequence).
int64_t code_points(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

/// Every answer of `task` as lm-eval tokenizes it. @throws headprune::Error for a model without
/// an LM head or tokenizer, or an answer past its positions.
std::vector<Request> build_requests(const models::Checkpoint& checkpoint, const MultipleChoiceTask& task) {
  if (!checkpoint.model->lm_head_weight().defined() || !checkpoint.tokenizer)
    throw Error(fmt::format("--task needs a causal language model with a tokenizer; {} is not one",
                            checkpoint.dir.string()));
  const auto& tokenizer = *checkpoint.tokenizer;
  const int64_t max_positions = checkpoint.model->config().max_position_embeddings;
  std::vector<Request> requests;
  for (std::size_t q = 0; q < task.questions.size(); ++q) {
    const auto& question = task.questions[q];
    for (std::size_t c = 0; c < question.choices.size(); ++c) {
      const auto where = fmt::format("{} question {} (id {}), choice {}", task.name, q, question.id, c);
      auto pair = scoring_pair(tokenizer, question.context, question.choices[c], where);
      Request r{q, c, pair.context, static_cast<int64_t>(pair.context.size())};
      r.ids.insert(r.ids.end(), pair.continuation.begin(), pair.continuation.end());
      if (static_cast<int64_t>(r.ids.size()) - 1 > max_positions)
        throw Error(fmt::format("{}: context and answer are {} tokens, more than the model's {} positions (+1)",
                                where, r.ids.size(), max_positions));
      requests.push_back(std::move(r));
    }
  }
  return requests;
}

/// Scores requests[begin, end) in one forward pass into `scores`.
void score_batch(models::AttentionModel& model, const torch::Tensor& lm_head, const std::vector<Request>& requests,
                 std::size_t begin, std::size_t end, int64_t pad_id, const torch::Device& device,
                 std::vector<QuestionScore>& scores) {
  const auto B = static_cast<int64_t>(end - begin);
  int64_t T = 0;
  for (auto i = begin; i < end; ++i) T = std::max<int64_t>(T, static_cast<int64_t>(requests[i].ids.size()) - 1);
  auto input_ids = torch::full({B, T}, pad_id, torch::kLong), mask = torch::zeros({B, T}, torch::kLong);
  std::vector<int64_t> rows, targets;
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = requests[begin + b];
    const auto n = static_cast<int64_t>(r.ids.size()) - 1;
    input_ids[b].slice(0, 0, n).copy_(torch::tensor(std::vector<int64_t>(r.ids.begin(), r.ids.end() - 1), torch::kLong));
    mask[b].slice(0, 0, n).fill_(1);
    for (int64_t p = r.context_tokens - 1; p < n; ++p) {
      rows.push_back(b * T + p);
      targets.push_back(r.ids[p + 1]);
    }
  }
  models::ModelInputs in{input_ids.to(device), mask.to(device), {}};
  const auto hidden = model.forward(in, nullptr).last_hidden_state;
  const auto picked = hidden.reshape({B * T, -1}).index_select(0, torch::tensor(rows, torch::kLong).to(device));
  const auto log_probs = lm_head_log_probs(picked, lm_head);
  const auto target = torch::tensor(targets, torch::kLong).to(device);
  const auto lp = log_probs.gather(1, target.unsqueeze(1)).squeeze(1).to(torch::kDouble).cpu();
  const auto greedy = (log_probs.argmax(1) == target).cpu();
  int64_t row = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = requests[begin + b];
    const auto n = static_cast<int64_t>(r.ids.size()) - r.context_tokens;
    auto& choice = scores[r.question].choices[r.choice];
    choice.tokens = n;
    choice.log_likelihood = lp.slice(0, row, row + n).sum().item<double>();
    choice.is_greedy = greedy.slice(0, row, row + n).all().item<bool>();
    row += n;
  }
}

/// First index of the largest value (numpy.argmax).
int64_t first_argmax(const std::vector<double>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

/// Mean and lm-eval's mean_stderr (sample standard deviation / sqrt(n)) of 0/1 outcomes.
std::pair<double, double> mean_and_stderr(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  if (x.size() < 2) return {mean, 0.0};
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return {mean, std::sqrt(ss / (n - 1)) / std::sqrt(n)};
}

void finish(const MultipleChoiceTask& task, TaskScore& score) {
  std::vector<double> acc, acc_norm;
  for (std::size_t q = 0; q < score.questions.size(); ++q) {
    auto& s = score.questions[q];
    std::vector<double> ll, normalised;
    for (std::size_t c = 0; c < s.choices.size(); ++c) {
      ll.push_back(s.choices[c].log_likelihood);
      normalised.push_back(s.choices[c].log_likelihood / static_cast<double>(code_points(task.questions[q].choices[c])));
    }
    s.pred = first_argmax(ll);
    s.pred_norm = first_argmax(normalised);
    acc.push_back(s.pred == s.gold ? 1.0 : 0.0);
    acc_norm.push_back(s.pred_norm == s.gold ? 1.0 : 0.0);
  }
  std::tie(score.acc, score.acc_stderr) = mean_and_stderr(acc);
  std::tie(score.acc_norm, score.acc_norm_stderr) = mean_and_stderr(acc_norm);
}

}  // namespace

nlohmann::json TaskScore::to_json() const {
  return {{"task", task},         {"file", file},   {"questions", questions.size()},
          {"acc", acc},           {"acc_stderr", acc_stderr},
          {"acc_norm", acc_norm}, {"acc_norm_stderr", acc_norm_stderr}};
}

ScoringPair scoring_pair(const models::Tokenizer& tokenizer, const std::string& context, const std::string& choice,
                         const std::string& where) {
  const auto kept = context.find_last_not_of(" \t\n\r\v\f");
  const std::string head = context.substr(0, kept == std::string::npos ? 0 : kept + 1);
  const std::string continuation = context.substr(head.size()) + " " + choice;
  auto whole = tokenizer.prompt_ids(head + continuation);
  auto prefix = tokenizer.prompt_ids(head);
  if (whole.size() <= prefix.size())
    throw Error(fmt::format("{}: the answer adds no tokens to the context", where));
  std::vector<int64_t> continuation_ids(whole.begin() + static_cast<std::ptrdiff_t>(prefix.size()), whole.end());
  return {std::move(prefix), std::move(continuation_ids)};
}

void check_multiple_choice(const models::Checkpoint& checkpoint, const MultipleChoiceTask& task) {
  build_requests(checkpoint, task);
}

TaskScore score_multiple_choice(models::Checkpoint& checkpoint, const MultipleChoiceTask& task,
                                std::size_t batch_size, const torch::Device& device) {
  auto& model = *checkpoint.model;
  const auto lm_head = model.lm_head_weight();
  auto requests = build_requests(checkpoint, task);
  std::stable_sort(requests.begin(), requests.end(), [](const Request& a, const Request& b) { return a.ids.size() > b.ids.size(); });
  TaskScore score{task.name, task.file.string(), {}};
  for (const auto& q : task.questions) score.questions.push_back({std::vector<ChoiceScore>(q.choices.size()), 0, 0, q.gold});
  torch::NoGradGuard no_grad;
  model.eval();
  const bool logits_were_on = model.compute_logits();
  model.set_compute_logits(false);
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  for (std::size_t begin = 0; begin < requests.size(); begin += batch_size) {
    const auto end = std::min(requests.size(), begin + batch_size);
    score_batch(model, lm_head, requests, begin, end, checkpoint.tokenizer->pad_id(), device, score.questions);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report > std::chrono::seconds(10) && end < requests.size()) {
      const double s = std::chrono::duration<double>(now - start).count();
      log::info("{}: {}/{} answers scored ({:.0f} s, about {:.0f} s left)", task.name, end, requests.size(), s,
                s * static_cast<double>(requests.size() - end) / static_cast<double>(end));
      last_report = now;
    }
  }
  model.set_compute_logits(logits_were_on);
  finish(task, score);
  return score;
}

std::string question_scores_jsonl(const MultipleChoiceTask& task, const TaskScore& score) {
  std::string out;
  for (std::size_t q = 0; q < score.questions.size(); ++q) {
    const auto& s = score.questions[q];
    nlohmann::json line = {{"task", task.name}, {"index", q},          {"id", task.questions[q].id},
                           {"gold", s.gold},    {"pred", s.pred},      {"pred_norm", s.pred_norm}};
    for (const auto& c : s.choices) {
      line["log_likelihoods"].push_back(c.log_likelihood);
      line["is_greedy"].push_back(c.is_greedy);
      line["tokens"].push_back(c.tokens);
    }
    out += line.dump() + "\n";
  }
  return out;
}

std::string task_score_table(const std::vector<TaskScore>& scores) {
  std::string out = fmt::format("{:<16} {:>9}  {:>14}  {:>14}\n", "task", "questions", "acc (%)", "acc_norm (%)");
  for (const auto& s : scores)
    out += fmt::format("{:<16} {:>9}  {:>7.2f} ± {:<4.2f}  {:>7.2f} ± {:<4.2f}\n", s.task, s.questions.size(),
                       100 * s.acc, 100 * s.acc_stderr, 100 * s.acc_norm, 100 * s.acc_norm_stderr);
  if (scores.size() > 1) {
    const auto avg = task_score_average(scores);
    out += fmt::format("{:<16} {:>9}  {:>7.2f}         {:>7.2f}\n", "average", "", 100 * avg["acc"].get<double>(),
                       100 * avg["acc_norm"].get<double>());
  }
  return out;
}

nlohmann::json task_score_average(const std::vector<TaskScore>& scores) {
  double acc = 0, acc_norm = 0;
  for (const auto& s : scores) {
    acc += s.acc;
    acc_norm += s.acc_norm;
  }
  const double n = static_cast<double>(std::max<std::size_t>(1, scores.size()));
  return {{"acc", acc / n}, {"acc_norm", acc_norm / n}};
}

}  // namespace headprune::pruner
