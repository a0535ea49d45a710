#include "pruner/cli/quality_flags.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/text/multiple_choice.h"

namespace headprune::cli {

void add_quality_flags(CommandLine& line, QualityFlags& f, const char* what) {
  f.task_dir = pruner::default_task_dir().string();
  line.group("Quality").add_options()
      ("sts", arg(&f.sts, "FILE"),
       fmt::format("STS Benchmark file: Spearman x100 scores {}", what).c_str())
      ("task", arg(&f.task_list, "LIST"),
       fmt::format("zero-shot tasks of a causal LM (as eval --task): the mean of their acc in percent scores {}", what).c_str())
      ("task-limit", arg(&f.task_limit, "N", f.task_limit), "with --task: the first N questions of each task (0 = all)")
      ("task-dir", arg(&f.task_dir, "DIR", f.task_dir), "with --task: where task names are found");
  line.alias("--eval-sts", "--sts");
}

pruner::QualityMeasure quality_measure(const QualityFlags& f, const po::variables_map& vm) {
  if (f.task_list.empty() && !vm["task-limit"].defaulted()) throw UsageError("--task-limit goes with --task");
  std::optional<std::filesystem::path> sts;
  if (!f.sts.empty()) sts = f.sts;
  std::vector<pruner::MultipleChoiceTask> tasks;
  if (!f.task_list.empty()) tasks = pruner::read_tasks(split_list(f.task_list), f.task_dir, f.task_limit);
  return pruner::QualityMeasure(sts, std::move(tasks));
}

}  // namespace headprune::cli
