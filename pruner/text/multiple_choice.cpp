#include "pruner/text/multiple_choice.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "models/input_file.h"
#include "models/json_get.h"

namespace headprune::pruner {
namespace {



std::string question_id(const nlohmann::json& line, const std::string& where) {
  if (!line.contains("id")) throw Error(fmt::format("{}: required key 'id' is missing", where));
  const auto& id = line.at("id");
  if (id.is_string()) return id.get<std::string>();
  if (id.is_number_integer()) return id.dump();
  throw Error(fmt::format("{}: key 'id' must be a string or an integer, not {}", where, id.type_name()));
}

MultipleChoiceQuestion read_question(const std::string& text, const std::string& where) {
  nlohmann::json line;
  try {
    line = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: not a JSON object ({})", where, e.what()));
  }
  if (!line.is_object()) throw Error(fmt::format("{}: not a JSON object", where));
  for (const auto& [key, value] : line.items())
    if (key != "id" && key != "context" && key != "choices" && key != "gold")
      throw Error(fmt::format("{}: key '{}' is not one headprune reads (id, context, choices, gold); "
                              "remove it rather than have it ignored",
                              where, key));
  MultipleChoiceQuestion q;
  q.id = question_id(line, where);
  q.context = models::json_required<std::string>(line, "context", where);
  q.choices = models::json_required<std::vector<std::string>>(line, "choices", where);
  q.gold = models::json_required<int64_t>(line, "gold", where);
  if (q.context.empty())
    throw Error(fmt::format("{}: 'context' is empty (a continuation needs a context to follow)", where));
  if (q.choices.size() < 2) throw Error(fmt::format("{}: 'choices' has {} answer(s); at least 2 are needed", where, q.choices.size()));
  for (std::size_t i = 0; i < q.choices.size(); ++i)
    if (q.choices[i].empty()) throw Error(fmt::format("{}: choice {} is empty", where, i));
  if (q.gold < 0 || q.gold >= static_cast<int64_t>(q.choices.size()))
    throw Error(fmt::format("{}: 'gold' {} is out of range for {} choices (0-based)", where, q.gold, q.choices.size()));
  return q;
}

}  // namespace

const std::vector<std::string>& known_tasks() {
  static const std::vector<std::string> tasks = {"piqa", "arc_easy", "arc_challenge", "hellaswag"};
  return tasks;
}

std::filesystem::path task_file(const std::string& task, const std::filesystem::path& task_dir) {
  const bool is_path = task.find('/') != std::string::npos ||
                       (task.size() > 6 && task.compare(task.size() - 6, 6, ".jsonl") == 0);
  if (is_path) return task;
  const auto& known = known_tasks();
  if (std::find(known.begin(), known.end(), task) == known.end())
    throw UsageError(fmt::format("unknown task '{}' (known: {}; or give a .jsonl file)", task, fmt::join(known, ", ")));
  auto file = task_dir / (task + ".jsonl");
  if (!std::filesystem::exists(file))
    throw Error(fmt::format("task {}: {} not found; run scripts/fetch-data {} (or set --task-dir)", task, file.string(), task));
  return file;
}

std::filesystem::path default_task_dir() {
  const char* cache = std::getenv("HEADPRUNE_CACHE");
  return std::filesystem::path(cache && *cache ? cache : ".cache") / "tasks";
}

std::vector<MultipleChoiceTask> read_tasks(const std::vector<std::string>& names,
                                           const std::filesystem::path& task_dir, std::size_t limit) {
  std::vector<MultipleChoiceTask> tasks;
  for (const auto& name : names) {
    if (name.empty()) throw UsageError("--task: an empty task name (a stray comma?)");
    tasks.push_back(read_multiple_choice(task_file(name, task_dir), limit));
  }
  return tasks;
}

MultipleChoiceTask read_multiple_choice(const std::filesystem::path& file, std::size_t limit) {
  auto in = models::open_input_file(file, "task file");
  MultipleChoiceTask task{file.stem().string(), file, {}};
  std::string text;
  for (std::size_t line_no = 1; std::getline(in, text); ++line_no) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    task.questions.push_back(read_question(text, fmt::format("{}:{}", file.string(), line_no)));
    if (limit > 0 && task.questions.size() == limit) break;
  }
  if (task.questions.empty()) throw Error(fmt::format("task file {} has no questions", file.string()));
  return task;
}

}  // namespace headprune::pruner
