// What `sweep` and `prune` score a model by: STS-B Spearman (--sts), zero-shot task accuracy
// (--task), or, with neither, the prune job's own fidelity (embedding cosine to the dense model).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/measure/sts.h"
#include "pruner/text/multiple_choice.h"

namespace headprune::pruner {

/// One run's quality measure, read before anything is written.
class QualityMeasure {
 public:
  /// Fidelity only: of() measures nothing.
  QualityMeasure() = default;
  /// `sts`: an STS Benchmark file (read here: a bad file is refused now); `tasks`: zero-shot
  /// tasks already read. At most one of them. @throws headprune::Error for a bad STS file;
  /// headprune::UsageError when both are given.
  QualityMeasure(const std::optional<std::filesystem::path>& sts, std::vector<MultipleChoiceTask> tasks);

  /// sweep.json's "quality": "sts_spearman", "zero_shot_acc" or "fidelity_mean_cosine".
  std::string name() const;
  /// The quality of the checkpoint at `model`: STS-B Spearman x100, or the unweighted mean over
  /// the tasks of acc in percent (pruner/measure/zero_shot.h); nullopt for fidelity, which the
  /// prune job's summary carries. @throws headprune::Error as load_checkpoint and the scorers
  /// (score_multiple_choice refuses a model that cannot score the tasks, as check() does).
  std::optional<double> of(const std::filesystem::path& model, const torch::Device& device) const;
  /// The same of a loaded checkpoint (the prune job's dense and pruned models, before export).
  std::optional<double> of(models::Checkpoint& checkpoint, const torch::Device& device) const;
  /// Whether of() measures anything (--sts or --task was given).
  bool measures() const { return sts_pairs_.has_value() || !tasks_.empty(); }
  /// Refuses, before anything trains, a model the tasks cannot score (an encoder, or a question
  /// longer than its positions). @throws headprune::Error as check_multiple_choice.
  void check(const models::Checkpoint& checkpoint) const;
  /// The tasks and how many questions each scores (sweep.json's "tasks"; empty unless zero-shot).
  std::vector<std::pair<std::string, std::size_t>> task_sizes() const;

  /// The table's column heading and the plot's axis label for a sweep.json "quality" name.
  static std::string column(const std::string& name);
  static std::string axis_label(const std::string& name);

 private:
  std::optional<std::vector<StsPair>> sts_pairs_;
  std::vector<MultipleChoiceTask> tasks_;
};

}  // namespace headprune::pruner
