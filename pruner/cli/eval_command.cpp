#include <iostream>

#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/input_file.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/dtype_option.h"
#include "pruner/atomic_write.h"
#include "pruner/log.h"
#include "pruner/measure/classification.h"
#include "pruner/measure/fidelity.h"
#include "pruner/measure/sts.h"
#include "pruner/measure/zero_shot.h"
#include "pruner/text/corpus.h"

namespace headprune::cli {
namespace {

/// Scores every task; the table goes to stdout unless `json`; per-question lines to `samples`.
nlohmann::json eval_tasks(models::Checkpoint& ckpt, const std::vector<pruner::MultipleChoiceTask>& tasks,
                          std::size_t batch_size, const torch::Device& device, const std::string& samples, bool json) {
  for (const auto& task : tasks) pruner::check_multiple_choice(ckpt, task);  // refuse before scoring any
  std::vector<pruner::TaskScore> scores;
  std::string lines;
  for (const auto& task : tasks) {
    log::info("{}: scoring {} questions ({})", task.name, task.questions.size(), task.file.string());
    scores.push_back(pruner::score_multiple_choice(ckpt, task, batch_size, device));
    lines += pruner::question_scores_jsonl(task, scores.back());
  }
  if (!samples.empty()) pruner::write_file_atomic(samples, lines);
  if (!json) std::cout << pruner::task_score_table(scores);
  nlohmann::json result = {{"average", pruner::task_score_average(scores)}};
  for (const auto& s : scores) result["tasks"].push_back(s.to_json());
  return result;
}

/// Accuracy of the checkpoint's classifier head on `file`; the line goes to stdout unless `json`.
nlohmann::json eval_classification(models::Checkpoint& ckpt, const std::string& file, std::size_t batch_size,
                                   const torch::Device& device, bool json) {
  const auto& labels = pruner::classifier_labels(ckpt);
  auto examples = pruner::read_labelled_texts(file, labels);
  log::info("classification: {} labelled sentences", examples.size());
  auto r = pruner::evaluate_classification(ckpt, examples, batch_size, device);
  auto result = r.to_json(labels);
  result["file"] = file;
  if (!json)
    std::cout << fmt::format("classification {}: accuracy {:.2f}% ({} of {})\n", file, 100.0 * r.accuracy,
                             r.correct, r.examples);
  return result;
}

/// Fidelity of `ckpt` to the dense `teacher` on the text `data` (all of it: half "train", half
/// "held out" as the corpus splits it); the line goes to stdout unless `json`.
nlohmann::json eval_fidelity(models::Checkpoint& ckpt, const std::string& teacher, const std::string& data,
                             std::size_t max_length, std::size_t batch_size, uint64_t seed,
                             const torch::Device& device, bool json) {
  auto dense = models::load_checkpoint(teacher, device);
  pruner::CorpusOptions co;
  co.max_length = max_length;
  co.holdout_fraction = 0.5;
  co.seed = seed;
  auto corpus = pruner::load_corpus({data}, *ckpt.tokenizer, co);
  auto all = corpus.train;
  all.insert(all.end(), corpus.heldout.begin(), corpus.heldout.end());
  auto f = pruner::measure_fidelity(*ckpt.model, {}, *dense.model, all, corpus.pad_id, dense.pooling,
                                    batch_size, device);
  auto result = f.to_json();
  result["teacher"] = teacher;
  if (!json) std::cout << fmt::format("fidelity to {} on {}\n", teacher, f.describe());
  return result;
}

}  // namespace

int run_eval(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("eval", "eval MODEL [--sts FILE] [--classification FILE] [--task LIST] [--teacher DENSE --data FILE] [--json]");
  std::string model, sts, teacher, data, classification, task_list, samples, task_dir = pruner::default_task_dir().string();
  std::size_t batch_size = 64, max_length = 128, limit = 0;
  DtypeOption dtype;
  line.positional("model", "MODEL", &model, "checkpoint folder");
  line.group("Measures (at least one)").add_options()
      ("sts", arg(&sts, "FILE"),
       "STS Benchmark file: Spearman x100 (tab-separated with score, sentence1, sentence2 in fields "
       "5-7, or the Hugging Face CSV with a sentence1,sentence2,score header)")
      ("classification", arg(&classification, "FILE"),
       "labelled sentences (sentence<TAB>label; label = class id or id2label name; a header line "
       "is skipped): accuracy of the model's classifier head")
      ("task", arg(&task_list, "LIST"),
       "zero-shot multiple-choice tasks of a causal LM, comma-separated: piqa, arc_easy, arc_challenge, "
       "hellaswag (made by scripts/fetch-data) or .jsonl files; accuracy (acc, acc_norm) scored as "
       "lm-evaluation-harness 0.4.13 scores them")
      ("teacher", arg(&teacher, "DENSE"), "dense checkpoint to measure fidelity against (with --data)")
      ("data", arg(&data, "FILE"), "with --teacher: held-out text, one sentence per line");
  line.group(group::kOptions).add_options()
      ("max-length", arg(&max_length, "N", max_length), "tokens per sentence for --data")
      ("batch-size", arg(&batch_size, "N", batch_size), "sentences (--task: answers) per batch")
      ("limit", arg(&limit, "N", limit), "--task: only the first N questions of each task (0 = all)")
      ("task-dir", arg(&task_dir, "DIR", task_dir), "--task: where task names are found ($HEADPRUNE_CACHE/tasks)")
      ("samples", arg(&samples, "FILE"), "--task: write each question's scores and choice here (JSONL)")
      ("json", "print JSON");
  dtype.add_to(line.group(group::kOptions));
  line.example("eval .cache/models/all-MiniLM-L6-v2 --sts sts-dev.csv", "the baseline's STS-B quality")
      .example("eval out/smollm2-25 --task piqa,arc_easy,hellaswag --limit 500",
               "zero-shot accuracy of a pruned LLM (after scripts/fetch-data)")
      .example("eval out/minilm-50 --teacher .cache/models/all-MiniLM-L6-v2 --data held-out.txt",
               "how close the pruned model's embeddings stay to the dense model's");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (sts.empty() && teacher.empty() && classification.empty() && task_list.empty())
    throw UsageError("give at least one of --sts FILE, --classification FILE, --task LIST, --teacher DENSE --data TEXT");
  if (task_list.empty() && (!vm["limit"].defaulted() || !samples.empty()))
    throw UsageError("--limit and --samples go with --task");
  if (teacher.empty() != data.empty()) throw UsageError("--teacher and --data go together");
  if (batch_size < 1) throw UsageError("--batch-size must be >= 1");
  if (max_length < 3) throw UsageError("--max-length must be >= 3");
  dtype.scalar_type();  // a bad --dtype is a usage error before anything loads
  const auto device = globals.torch_device();
  // Every input is checked before the model loads.
  for (const auto& [file, what] : {std::pair{sts, "--sts"}, {classification, "--classification"}, {data, "--data"}})
    if (!file.empty()) models::open_input_file(file, what);
  const auto tasks = pruner::read_tasks(task_list.empty() ? std::vector<std::string>{} : split_list(task_list), task_dir, limit);
  models::require_tokenizer_files(model, "eval");
  auto ckpt = models::load_checkpoint(model, device);
  dtype.apply(ckpt);  // MODEL only: a --teacher stays float32, the reference
  const bool json = vm.count("json") > 0;
  nlohmann::json result = {{"model", model}, {"dtype", dtype.name}};
  if (!sts.empty()) {
    auto pairs = pruner::read_sts(sts);
    log::info("STS: embedding {} sentence pairs", pairs.size());
    auto r = pruner::evaluate_sts(ckpt, pairs, batch_size, device);
    result["sts"] = {{"file", sts}, {"pairs", r.pairs}, {"spearman", r.spearman_x100}};
    if (!json) std::cout << fmt::format("STS {}: spearman x100 = {:.2f} ({} pairs)\n", sts, r.spearman_x100, r.pairs);
  }
  if (!classification.empty()) result["classification"] = eval_classification(ckpt, classification, batch_size, device, json);
  if (!tasks.empty()) result["zero_shot"] = eval_tasks(ckpt, tasks, batch_size, device, samples, json);
  if (!teacher.empty())
    result["fidelity"] = eval_fidelity(ckpt, teacher, data, max_length, batch_size, globals.seed, device, json);
  if (json) std::cout << result.dump(2) << "\n";
  return 0;
}

}  // namespace headprune::cli
