// Zero-shot multiple-choice accuracy of a causal language model, scored as
// lm-evaluation-harness 0.4.13 scores its `multiple_choice` tasks with the HF backend
// (lm_eval/api/model.py _encode_pair, lm_eval/models/huggingface.py _loglikelihood_tokens,
// lm_eval/api/task.py process_results).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/text/multiple_choice.h"

namespace headprune::pruner {

/// One answer's score: log P(continuation | context) summed over its tokens (nats), and whether
/// every continuation token is the model's argmax (lm-eval's is_greedy).
struct ChoiceScore {
  double log_likelihood = 0;
  bool is_greedy = false;
  int64_t tokens = 0;  ///< continuation tokens scored
};

/// One question's outcome: pred = argmax of the log-likelihoods (acc), pred_norm = argmax of
/// log-likelihood / the choice's length in characters (Unicode code points, as Python's len;
/// lm-eval's acc_norm). Ties go to the first, as numpy.argmax.
struct QuestionScore {
  std::vector<ChoiceScore> choices;
  int64_t pred = 0;
  int64_t pred_norm = 0;
  int64_t gold = 0;
};

/// A task's result: accuracies in [0, 1] with lm-eval's standard error of the mean
/// (sample standard deviation / sqrt(n); 0 for a single question).
struct TaskScore {
  std::string task;
  std::string file;
  std::vector<QuestionScore> questions;
  double acc = 0, acc_stderr = 0, acc_norm = 0, acc_norm_stderr = 0;
  /// {"task", "file", "questions", "acc", "acc_stderr", "acc_norm", "acc_norm_stderr"}.
  nlohmann::json to_json() const;
};

/// The token ids lm-eval scores for one answer: the context's ids and the continuation's.
/// Whitespace ending `context` moves to the front of " " + `choice`; the continuation's ids are
/// those of tokenize(context + continuation) after the first |tokenize(context)| ids, where
/// tokenize is the tokenizer's prompt_ids (HF encode with its special tokens before the text:
/// lm-eval's default add_special_tokens; BOS for Gemma and llama2.c, none for SmolLM2).
/// @throws headprune::Error naming `where` when the continuation has no tokens of its own.
struct ScoringPair {
  std::vector<int64_t> context;
  std::vector<int64_t> continuation;
};
ScoringPair scoring_pair(const models::Tokenizer& tokenizer, const std::string& context,
                         const std::string& choice, const std::string& where);

/// Checks, without scoring, that `checkpoint` can score `task`: a causal LM with a tokenizer,
/// and every answer (with its context) within its positions; eval runs it on every task before
/// scoring the first. @throws headprune::Error as score_multiple_choice.
void check_multiple_choice(const models::Checkpoint& checkpoint, const MultipleChoiceTask& task);

/// Scores every answer of `task` with `checkpoint` (a causal LM: its forward pass on the context
/// and continuation ids minus the last, the continuation's log-probabilities from the final
/// hidden states through the LM head in float32), `batch_size` answers per forward pass, longest
/// first, right-padded. Logs progress every 10 s.
/// @throws headprune::Error if the model has no LM head or tokenizer, or naming the question
///         whose context and answer exceed max_position_embeddings (+ 1) tokens; nothing is
///         scored then.
TaskScore score_multiple_choice(models::Checkpoint& checkpoint, const MultipleChoiceTask& task,
                                std::size_t batch_size, const torch::Device& device);

/// One JSON line per question of `task` (as scored in `score`): {"task", "index", "id", "gold",
/// "pred", "pred_norm", "log_likelihoods", "is_greedy", "tokens"}, for `eval --samples`.
std::string question_scores_jsonl(const MultipleChoiceTask& task, const TaskScore& score);

/// The results as a table: task, questions, acc ± stderr, acc_norm ± stderr (percent), and
/// with several tasks their unweighted average.
std::string task_score_table(const std::vector<TaskScore>& scores);

/// The unweighted mean of acc and acc_norm over `scores` (each task counts once, as the
/// LLM-Pruner and Minitron tables average), as {"acc", "acc_norm"}.
nlohmann::json task_score_average(const std::vector<TaskScore>& scores);

}  // namespace headprune::pruner
