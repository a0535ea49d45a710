// Zero-shot multiple-choice tasks (`eval --task`): questions read from JSONL, one per line, as
// scripts/fetch-data writes them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace headprune::pruner {

/// One question: the model scores " " + choice after `context` (lm-evaluation-harness's
/// multiple_choice output type with its default target delimiter " ").
struct MultipleChoiceQuestion {
  std::string id;                    ///< the data set's own id (a string or number in the file)
  std::string context;               ///< the prompt, rendered as the task defines it
  std::vector<std::string> choices;  ///< >= 2 non-empty answers, without the leading space
  int64_t gold = 0;                  ///< index of the right answer in choices
};

/// A task: its name (the file's stem) and its questions in file order.
struct MultipleChoiceTask {
  std::string name;
  std::filesystem::path file;
  std::vector<MultipleChoiceQuestion> questions;
};

/// The tasks scripts/fetch-data makes: piqa, arc_easy, arc_challenge, hellaswag.
const std::vector<std::string>& known_tasks();

/// The file of `task`: a value with a '/' or ending in ".jsonl" is a path as given; a known task
/// name is `task_dir`/NAME.jsonl.
/// @throws headprune::UsageError for an unknown name (listing the known ones);
///         headprune::Error when a known task's file is missing ("run scripts/fetch-data NAME").
std::filesystem::path task_file(const std::string& task, const std::filesystem::path& task_dir);

/// $HEADPRUNE_CACHE/tasks, or .cache/tasks without it: where scripts/fetch-data writes.
std::filesystem::path default_task_dir();

/// Reads the task of each name (task_file, then read_multiple_choice with `limit`).
/// @throws headprune::UsageError for an empty or unknown name; headprune::Error as those two.
std::vector<MultipleChoiceTask> read_tasks(const std::vector<std::string>& names,
                                           const std::filesystem::path& task_dir, std::size_t limit);

/// Reads a task file: one JSON object per line with "id" (string or integer), "context" (a
/// non-empty string), "choices" (at least two non-empty strings) and "gold" (an integer index
/// into choices); blank lines are skipped. `limit` > 0 keeps only the first `limit` questions
/// (lm-eval's --limit).
/// @throws headprune::Error naming the file, the line and what is wrong: not JSON, a missing or
///         wrongly typed field, any other key (e.g. a per-task delimiter it would not apply), an empty context or choice, fewer than two choices, gold out of
///         range; or a file without questions.
MultipleChoiceTask read_multiple_choice(const std::filesystem::path& file, std::size_t limit = 0);

}  // namespace headprune::pruner
