#include "pruner/jobs/prune_job.h"

#include <chrono>
#include <optional>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/gguf_model.h"
#include "models/loader.h"
#include "pruner/analysis/head_analysis.h"
#include "pruner/atomic_write.h"
#include "pruner/format.h"
#include "pruner/jobs/latency_measurement.h"
#include "pruner/log.h"
#include "pruner/measure/classification.h"
#include "pruner/measure/fidelity.h"
#include "pruner/report/report.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/export.h"
#include "pruner/surgery/gguf_folder.h"
#include "pruner/surgery/onnx_export.h"
#include "pruner/surgery/surgery.h"
#include "pruner/training/gates_folder.h"
#include "pruner/training/memory_fit.h"

namespace headprune::pruner {
namespace fs = std::filesystem;
namespace {

void stage(int n, const std::string& what) { log::info("\n[{}/5] {}", n, what); }

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The gates folder's files and the report, written under headprune/ in the export.
void add_gate_artefacts(std::map<std::string, std::string>& extra, const GateState& gates,
                        const std::string& train_log, const std::string& out) {
  auto report = report_from_gates(gates, out);
  extra["headprune/gates.json"] = gates.to_json().dump(1) + "\n";
  extra["headprune/train_log.jsonl"] = train_log;
  extra["headprune/report.txt"] = to_text(report);
  extra["headprune/report.json"] = to_json(report).dump(2) + "\n";
  extra["headprune/heads.svg"] = to_svg(report);
}

/// Refuses to start over a run that was interrupted (its snapshot would be lost) unless
/// --resume continues it or --force discards it.
void check_interrupted(const PruneJobOptions& o, const fs::path& work) {
  if (const auto stopped = interrupted_run(work); !o.training.resume && !o.force && !stopped.empty())
    throw Error(fmt::format("an interrupted prune of --out {} left its gate training in {} ({}); "
                            "pass --resume to continue it, or --force to start again",
                            o.out.string(), work.string(), stopped));
}

/// --analyze-conllu's treebank, read before training so that a bad file fails at once.
AnalysisInput read_treebank(const PruneJobOptions& o, const models::Checkpoint& ckpt) {
  AnalysisInput treebank;
  if (!o.analyze_conllu.empty())
    append_treebank(treebank, *ckpt.tokenizer, o.analyze_conllu, static_cast<std::size_t>(ckpt.max_seq_length));
  return treebank;
}

/// With --analyze: the roles of the dense model's heads on the held-out text (and the
/// treebank), with the trained gates' verdict on each, added to `extra` as head_roles.*.
/// Returns the heads per role, or null without --analyze.
nlohmann::json add_role_artefacts(const PruneJobOptions& o, models::Checkpoint& dense, const Corpus& corpus,
                                  const AnalysisInput& treebank, const GateState& gates,
                                  const GateTrainingOptions& training, std::map<std::string, std::string>& extra) {
  if (!o.analyze && o.analyze_conllu.empty()) return nullptr;
  auto input = sentences_from_ids(*dense.tokenizer, corpus.heldout);
  input.sentences.insert(input.sentences.end(), treebank.sentences.begin(), treebank.sentences.end());
  AnalysisOptions options;
  options.batch_size = training.batch_size;
  options.device = training.device;
  const auto analysis = analyze_heads(dense, input, options, gates);
  log::info("head roles on {} sentences ({:.1f} s): {}", analysis.sentences, analysis.seconds,
            analysis.role_counts().dump());
  extra.merge(analysis.files());
  return analysis.role_counts();
}

/// Stage 4: dense and pruned timed side by side (unless --no-bench); bench.json joins `extra`.
/// @returns the benchmark's JSON, or null when skipped.
nlohmann::json bench_stage(const PruneJobOptions& o, models::AttentionModel& dense, models::AttentionModel& pruned,
                           std::map<std::string, std::string>& extra) {
  stage(4, o.bench ? "benchmarking dense vs pruned" : "benchmark skipped (--no-bench)");
  if (!o.bench) return nullptr;
  // Timed as the exported checkpoints run: float32, not widened per use (WeightStorage::source).
  models::widen_narrow_weights(dense);
  models::widen_narrow_weights(pruned);
  auto bench = run_bench(dense, pruned, o.bench_options);
  auto json = bench.to_json();
  extra["headprune/bench.json"] = json.dump(2) + "\n";
  log::info("{}", bench.to_text());
  return json;
}

/// With a latency budget: the budget, the table's prediction and the benchmark's measurement of
/// the exported model at the budget's shape (null without a budget or a benchmark). The verdict
/// compares the side-by-side ratio pruned / dense, scaled to the table's dense entry, with the
/// budget: absolute milliseconds of one model differ between processes on a shared machine by
/// more than a head's cost (measured on 2 vCPUs: MiniLM 22.3–26.5 ms, stories260K 6.2–10.8 ms at
/// 1 × 128 in consecutive runs), while the ratio of two models timed interleaved holds.
nlohmann::json measured_latency(const PruneJobOptions& o, const nlohmann::json& summary, const nlohmann::json& bench) {
  const auto& t = o.training;
  if (!t.target_latency || bench.is_null()) return nullptr;
  for (const auto& cell : bench["results"])
    if (cell["batch_size"] == t.latency_batch_size && cell["seq_len"] == t.latency_seq_len) {
      const double measured = cell["pruned_ms"]["median"], dense_measured = cell["dense_ms"]["median"];
      const auto& gates = summary["gates"];
      const double budget = gates["target_latency_ms"], table_dense = gates["dense_latency_ms"];
      const double share = measured / dense_measured, on_table = share * table_dense;
      const bool within = on_table <= budget;
      log::info("latency budget {:.3g} ms at {}x{} ({:.1f}% of the table's dense {:.3g} ms): measured {:.1f}% of "
                "dense side by side ({:.3g} vs {:.3g} ms in this process) = {:.3g} ms on the table's scale, {} "
                "(the table predicted {:.3g} ms)",
                budget, t.latency_batch_size, t.latency_seq_len, 100 * budget / table_dense, table_dense,
                100 * share, measured, dense_measured, on_table, within ? "within the budget" : "OVER the budget",
                gates["predicted_latency_ms"].get<double>());
      return {{"budget_ms", budget},
              {"predicted_ms", gates["predicted_latency_ms"]},
              {"table_dense_ms", table_dense},
              {"measured_ms", measured},
              {"dense_measured_ms", dense_measured},
              {"measured_share", share},
              {"measured_ms_on_table_scale", on_table},
              {"within_budget", within},
              {"batch_size", t.latency_batch_size},
              {"seq_len", t.latency_seq_len}};
    }
  return nullptr;
}

/// What stages 2–5 work on: the model the gates were trained on (changed in place), its text,
/// the gates and their training's settings and log.
struct TrainedRun {
  models::Checkpoint& student;
  std::optional<models::Checkpoint>& dense;  ///< the dense model kept when the weights trained, else empty
  const Corpus& corpus;
  const AnalysisInput& treebank;
  const GateState& gates;
  const GateTrainingOptions& training;
  std::string train_log;
};

/// Stages 2–5: rearranges the mask, removes the heads, refits, measures fidelity, benchmarks,
/// and writes the export.
nlohmann::json finish_prune_job(const PruneJobOptions& o, const TrainedRun& run,
                                std::chrono::steady_clock::time_point t0) {
  stage(2, "removing heads");
  auto& student = run.student;
  // The dense model beside the one surgery cuts: the teacher kept from training when the weights
  // trained, else a copy of the student (its weights never changed).
  auto dense = run.dense ? std::move(*run.dense) : models::copy_checkpoint(student);
  auto gates = run.gates;
  // With a fix_mask the training already rearranged the mask, before the weights trained.
  if (!run.training.fix_mask) rearrange_mask(gates, student, dense, run.corpus.train, run.corpus.pad_id, o.rearrange);
  auto applied = apply_in_memory(student, plan_from_gates(gates, *student.model, o.fold_gates));
  log::info("{} of {} heads kept; per layer {}{}", applied.heads_after, applied.heads_before,
            fmt::join(student.model->config().heads_per_layer(), " "),
            applied.ffn_neurons_removed > 0
                ? fmt::format("; FFN widths {}", fmt::join(applied.ffn_widths_after, " "))
                : std::string());
  const auto refit = refit_pruned_model(*student.model, *dense.model, run.corpus.train, run.corpus.pad_id, o.refit)
                         .to_json();
  std::map<std::string, std::string> extra;
  add_gate_artefacts(extra, gates, run.train_log, o.out.string());
  nlohmann::json summary = {
      {"target_sparsity", run.training.target_sparsity ? nlohmann::json(*run.training.target_sparsity) : nlohmann::json()},
      {"gates", gates.summary},
      {"refit", refit}};
  nlohmann::json record = {{"command", "prune"}, {"source", o.model.string()}, {"fold_gates", o.fold_gates},
                           {"refit", refit}, {"training", run.training.to_json()}};
  const auto roles = [&](nlohmann::json& s, std::map<std::string, std::string>& files) {
    if (auto counts = add_role_artefacts(o, dense, run.corpus, run.treebank, gates, run.training, files);
        !counts.is_null())
      s["head_roles"] = counts;
  };
  return measure_and_export(o, {student, dense, run.corpus, applied, run.training.batch_size}, std::move(summary),
                            std::move(record), std::move(extra), t0, roles);
}

/// The model and its text, as stage 1 reads them.
struct JobInputs {
  models::Checkpoint student;
  Corpus corpus;
  AnalysisInput treebank;
};

JobInputs load_job_inputs(const PruneJobOptions& o) {
  refuse_if_it_cannot_fit(o.model, o.training, static_cast<int64_t>(o.training.batch_size * o.corpus.max_length));
  auto student = models::load_checkpoint(o.model, o.training.device, o.training.weight_storage());
  if (o.gguf) models::check_gguf_exportable(student);  // before hours of training
  o.quality.check(student);                               // --task on a model that cannot score it
  auto corpus = load_training_text(o.text, student, o.corpus);
  auto treebank = read_treebank(o, student);
  log::info("corpus {}: {} documents, {} for training, {} held out", o.text.describe(), corpus.lines_read,
            corpus.train.size(), corpus.heldout.size());
  return {std::move(student), std::move(corpus), std::move(treebank)};
}

/// --sts / --task: the dense and the pruned model scored alike ({"measure", "dense", "pruned"}),
/// or null without them.
nlohmann::json measure_quality(const QualityMeasure& quality, const RemovedModel& m, const torch::Device& device) {
  if (!quality.measures()) return nullptr;
  log::info("quality ({}): scoring the dense model, then the pruned one", QualityMeasure::column(quality.name()));
  const auto dense = quality.of(m.dense, device).value();
  const auto pruned = quality.of(m.pruned, device).value();
  log::info("quality ({}): {:.2f} dense -> {:.2f} pruned", QualityMeasure::column(quality.name()), dense, pruned);
  return {{"measure", quality.name()}, {"dense", dense}, {"pruned", pruned}};
}

}  // namespace

nlohmann::json measure_and_export(const PruneJobOptions& o, const RemovedModel& m, nlohmann::json summary,
                                  nlohmann::json record, std::map<std::string, std::string> extra,
                                  std::chrono::steady_clock::time_point t0, const ExtraMeasures& also) {
  const auto device = o.training.device;
  auto& pruned = m.pruned;
  stage(3, "verifying fidelity to the dense model on held-out text");
  const auto fidelity = measure_fidelity(*pruned.model, {}, *m.dense.model, m.corpus.heldout, m.corpus.pad_id,
                                         m.dense.pooling, m.batch_size, device);
  log::info("{}", fidelity.describe());
  const auto accuracy = heldout_accuracy(pruned, *pruned.model, {}, *m.dense.model, m.corpus, m.batch_size, device);
  const auto quality = measure_quality(o.quality, m, device);
  if (also) also(summary, extra);
  const auto bench_json = bench_stage(o, *m.dense.model, *pruned.model, extra);
  m.dense.model.reset();  // not needed past here: the export's check loads the written folder, a model as large

  stage(5, "writing the pruned checkpoint and its report");
  summary.update(nlohmann::json{{"model", o.model.string()},
                                {"out", o.out.string()},
                                {"heads_kept", m.applied.heads_after},
                                {"heads_total", m.applied.heads_before},
                                {"heads_per_layer", pruned.model->config().heads_per_layer()},
                                {"kept_heads", pruned.model->config().kept_heads},
                                {"fidelity", fidelity.to_json()},
                                {"bench", bench_json}});
  if (!accuracy.is_null()) summary["heldout_accuracy"] = accuracy;
  if (!quality.is_null()) summary["quality"] = quality;
  if (const auto latency = measured_latency(o, summary, bench_json); !latency.is_null()) summary["latency"] = latency;
  summary.update(o.text.to_json());
  summary["text"] = m.corpus.profile.to_json();
  record.update(o.text.to_json());
  // summary.json needs the written sizes: it joins the same atomic folder build last.
  export_and_verify(m.applied, pruned, o.out, o.force, record, device, extra,
                    [&](const ApplyResult& done) -> std::map<std::string, std::string> {
                      summary["apply"] = done.to_json();
                      std::map<std::string, std::string> late;
                      if (o.onnx) late.merge(onnx_folder_files(pruned));
                      if (o.gguf) late.merge(gguf_folder_files(pruned, o.out));
                      summary["seconds"] = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - t0).count();
                      late["headprune/summary.json"] = summary.dump(2) + "\n";
                      return late;
                    });
  return summary;
}

nlohmann::json run_prune_job(const PruneJobOptions& o, const ProcessGroup& group) {
  const auto t0 = std::chrono::steady_clock::now();
  check_export_target(o.model, o.out, o.force);
  const auto out_abs = fs::absolute(o.out);
  const auto work = out_abs.parent_path() / fmt::format(".{}.gates", out_abs.filename().string());
  check_interrupted(o, work);
  models::require_tokenizer_files(o.model, "prune");

  stage(1, "training gates");
  auto in = load_job_inputs(o);
  auto training = o.training;
  training.out_dir = work;
  training.model_path = o.model.string();
  if (!training.resume && fs::exists(work) && group.is_main()) fs::remove_all(work);
  // With --train-weights the dense model is kept (a copy, before the student's weights change):
  // the teacher, then the reference of stages 2-5.
  std::optional<models::Checkpoint> dense;
  if (training.train_weights) dense = models::copy_checkpoint(in.student);
  // Kwon et al. rearrange the mask the weights are then tuned to: with --train-weights, before
  // the weights phase (after it, the fine-tuned weights have adapted to the mask and no swap helps).
  if (training.train_weights && o.rearrange.enabled)
    training.fix_mask = [&](GateState& mask) {
      rearrange_mask(mask, in.student, *dense, in.corpus.train, in.corpus.pad_id, o.rearrange);
    };
  const auto gates = discard_if_failed(
      [&] {
        provide_latency_table(training, in.student, group);
        return train_gates(in.student, in.corpus, training, group, dense ? dense->model : nullptr);
      },
      work, true, group.is_main() && !training.resume);
  if (!group.is_main()) return {{"rank", group.rank()}};  // rank 0 removes, measures, exports
  if (!gates.complete) throw Error("gate training stopped early; rerun with --resume");
  const auto summary = finish_prune_job(
      o, {in.student, dense, in.corpus, in.treebank, gates, training, read_file(work / "train_log.jsonl")}, t0);
  fs::remove_all(work);
  return summary;
}

nlohmann::json prune_with_gates(const PruneJobOptions& o, const GateState& gates, const std::string& train_log) {
  const auto t0 = std::chrono::steady_clock::now();
  check_export_target(o.model, o.out, o.force);
  log::info("\n[1/5] a given mask: {} of {} heads kept ({})", gates.heads_kept(), gates.heads_total(),
            gates.summary.contains("baseline") ? "a baseline, no training" : "gates trained earlier");
  auto in = load_job_inputs(o);
  std::optional<models::Checkpoint> dense;  // the student's weights are the dense ones
  return finish_prune_job(o, {in.student, dense, in.corpus, in.treebank, gates, o.training, train_log}, t0);
}

}  // namespace headprune::pruner
