// `headprune prune`: the whole job — train gates, remove heads, verify, benchmark, report.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "models/checkpoint.h"
#include "pruner/jobs/quality_measure.h"
#include "pruner/measure/bench.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/mask_rearrangement.h"
#include "pruner/surgery/refit.h"
#include "pruner/text/corpus.h"
#include "pruner/text/training_text.h"
#include "pruner/training/gate_training.h"

namespace headprune::pruner {

/// Settings of every stage.
struct PruneJobOptions {
  std::filesystem::path model;
  TrainingText text;  ///< --data or --labels
  std::filesystem::path out;
  bool force = false;
  bool fold_gates = true;
  bool bench = true;
  bool onnx = false;  ///< also write onnx/model.onnx (pruner/surgery/onnx_export.h)
  bool gguf = false;  ///< also write model.gguf (pruner/surgery/gguf_folder.h)
  /// Name each head's role on the held-out text (pruner/analysis/head_analysis.h) with the
  /// trained gates, stored as headprune/head_roles.{json,txt,svg}.
  bool analyze = false;
  std::filesystem::path analyze_conllu;  ///< also analyse on this treebank (implies analyze)
  CorpusOptions corpus;
  GateTrainingOptions training;  ///< out_dir is set by the job (a work folder beside --out)
  BenchOptions bench_options;
  RefitOptions refit;  ///< after removal, on the corpus's training share (pruner/surgery/refit.h)
  /// Before removal, on the corpus's training share (pruner/surgery/mask_rearrangement.h).
  RearrangeOptions rearrange;
  /// --sts / --task: the dense and the pruned model scored after fidelity, in the summary's
  /// "quality" ({"measure", "dense", "pruned"}); measures nothing by default.
  QualityMeasure quality;
};

/// Runs the stages with a progress display and returns the summary that is also written to
/// `<out>/headprune/summary.json`. The output folder is written once, atomically, at the end:
///   <out>/                  the pruned checkpoint (loads in headprune and transformers 4.x)
///   <out>/headprune/        gates.json, train_log.jsonl, report.txt, report.json, heads.svg,
///                           bench.json, summary.json; head_roles.{json,txt,svg} with `analyze`
///   <out>/onnx/model.onnx   with `onnx`
///   <out>/model.gguf        with `gguf`
/// Gate training works in `<out-parent>/.<out-name>.gates/` (kept on failure, so `--resume`
/// can continue; removed on success). In a data-parallel `group` every rank trains its share;
/// rank 0 alone then removes heads, measures and exports (the others return {"rank": r}).
/// @throws headprune::Error before any training if the output folder cannot be used, the
///         target is unreachable or the corpus is unusable.
nlohmann::json run_prune_job(const PruneJobOptions& options, const ProcessGroup& group = ProcessGroup());

/// Stages 2–5 of a prune job with gates trained elsewhere (sweep --one-run reads one training
/// at several targets): loads options.model and options.text afresh (the same training share
/// and held-out text as the run), removes the heads `gates` closes, refits, measures, benchmarks
/// and exports to options.out as run_prune_job does; `train_log` (the run's train_log.jsonl) is
/// stored with the gates. The gates must belong to options.model itself (gates only, not
/// --train-weights). @throws headprune::Error as run_prune_job's later stages do.
nlohmann::json prune_with_gates(const PruneJobOptions& options, const GateState& gates, const std::string& train_log);

/// A model after surgery, with what its last stages compare it against.
struct RemovedModel {
  models::Checkpoint& pruned;  ///< after surgery (exported from here)
  models::Checkpoint& dense;   ///< options.model as loaded; measure_and_export releases its model after the benchmark
  const Corpus& corpus;        ///< the run's text: fidelity and accuracy on its held-out share
  ApplyResult& applied;        ///< the surgery's result; the export fills the rest
  std::size_t batch_size;
};
/// More measurements between fidelity and the benchmark (prune's head roles): may add to the
/// summary and to the files written under the export.
using ExtraMeasures = std::function<void(nlohmann::json& summary, std::map<std::string, std::string>& files)>;

/// Stages 3–5 after any surgery (heads by gates, or whole layers): fidelity on the held-out
/// text (and held-out accuracy with labels), `also`, the benchmark unless --no-bench, then the
/// export with `extra` files and headprune/summary.json: `summary` plus model, out, heads,
/// fidelity, bench, apply (sizes), seconds since `t0`. `record` (plus the text's) becomes the
/// config's headprune.record. @throws headprune::Error as export_and_verify does.
nlohmann::json measure_and_export(const PruneJobOptions& options, const RemovedModel& model, nlohmann::json summary,
                                  nlohmann::json record, std::map<std::string, std::string> extra,
                                  std::chrono::steady_clock::time_point t0, const ExtraMeasures& also = {});

}  // namespace headprune::pruner
