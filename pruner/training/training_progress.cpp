#include "pruner/training/training_progress.h"

#include <fmt/format.h>

#include "pruner/format.h"
#include "pruner/log.h"

namespace headprune::pruner {
namespace {

void log_line(const StepProgress& p) {
  if (!p.gate_phase)
    log::info("step {:>5}/{} | fine-tuning weights, mask fixed | loss {:.5f} ({}) | {:.0f} "
              "tok/s | ETA {}",
              p.done, p.total_steps, p.loss, p.parts.describe(), p.tokens_per_second,
              human_duration(p.eta_seconds));
  else
    log::info("step {:>5}/{} | loss {:.5f} ({}, reg {:+.5f}) | E[L0] {:.1f}/{} | target "
              "{:.3f} s^ {:.3f} | lambda {:.3f} {:.3f} | {:.0f} tok/s | ETA {}",
              p.done, p.total_steps, p.loss, p.parts.describe(), p.regularizer, p.expected_l0,
              p.total_heads, p.target, p.expected_sparsity, p.lambda_1, p.lambda_2,
              p.tokens_per_second, human_duration(p.eta_seconds));
}

nlohmann::json record(const StepProgress& p) {
  auto r = nlohmann::json{{"step", p.done},
                          {"phase", p.gate_phase ? "gates" : "weights"},
                          {"loss", p.loss},
                          {"regularizer", p.regularizer},
                          {"expected_l0", p.expected_l0},
                          {"expected_sparsity", p.expected_sparsity},
                          {"target", p.target},
                          {"lambda_1", p.lambda_1},
                          {"lambda_2", p.lambda_2},
                          {"tokens_per_second", p.tokens_per_second},
                          {"seconds", p.seconds}};
  r.update(p.parts.parts());
  return r;
}

}  // namespace

TrainingProgress::TrainingProgress(const std::filesystem::path& dir, bool append)
    : train_log_(dir / "train_log.jsonl", append ? std::ios::app : std::ios::trunc) {}

void TrainingProgress::log(const StepProgress& p) {
  log_line(p);
  train_log_ << record(p).dump() << "\n";
  train_log_.flush();
}

}  // namespace headprune::pruner
