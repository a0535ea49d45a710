#include "pruner/jobs/quality_measure.h"

#include "models/errors.h"
#include "models/loader.h"
#include "pruner/measure/zero_shot.h"

namespace headprune::pruner {

QualityMeasure::QualityMeasure(const std::optional<std::filesystem::path>& sts, std::vector<MultipleChoiceTask> tasks)
    : tasks_(std::move(tasks)) {
  if (sts && !tasks_.empty()) throw UsageError("--sts and --task are two quality measures: give one");
  if (sts) sts_pairs_ = read_sts(*sts);
}

std::string QualityMeasure::name() const {
  if (sts_pairs_) return "sts_spearman";
  return tasks_.empty() ? "fidelity_mean_cosine" : "zero_shot_acc";
}

std::optional<double> QualityMeasure::of(const std::filesystem::path& model, const torch::Device& device) const {
  if (!measures()) return std::nullopt;
  auto ckpt = models::load_checkpoint(model, device);
  return of(ckpt, device);
}

std::optional<double> QualityMeasure::of(models::Checkpoint& checkpoint, const torch::Device& device) const {
  if (!measures()) return std::nullopt;
  if (sts_pairs_) return evaluate_sts(checkpoint, *sts_pairs_, 64, device).spearman_x100;
  double acc = 0;
  for (const auto& task : tasks_) acc += score_multiple_choice(checkpoint, task, 64, device).acc;
  return 100.0 * acc / static_cast<double>(tasks_.size());
}

void QualityMeasure::check(const models::Checkpoint& checkpoint) const {
  for (const auto& task : tasks_) check_multiple_choice(checkpoint, task);
}

std::vector<std::pair<std::string, std::size_t>> QualityMeasure::task_sizes() const {
  std::vector<std::pair<std::string, std::size_t>> sizes;
  for (const auto& task : tasks_) sizes.emplace_back(task.name, task.questions.size());
  return sizes;
}

std::string QualityMeasure::column(const std::string& name) {
  if (name == "sts_spearman") return "STS x100";
  return name == "zero_shot_acc" ? "acc %" : "cosine";
}

std::string QualityMeasure::axis_label(const std::string& name) {
  if (name == "sts_spearman") return "STS-B Spearman x100";
  return name == "zero_shot_acc" ? "zero-shot accuracy (%, mean of the tasks)" : "embedding cosine to dense";
}

}  // namespace headprune::pruner
