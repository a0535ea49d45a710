#include "pruner/cli/training_flags.h"

#include <algorithm>

#include <cmath>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/input_file.h"
#include "pruner/log.h"

namespace headprune::cli {

pruner::TrainingSettings training_settings(const po::variables_map& vm, const GlobalOptions& globals) {
  auto settings = pruner::training_settings(vm, globals.seed, globals.torch_device());
  for (const auto& file : settings.text.data) models::open_input_file(file, "--data");
  if (settings.text.labelled()) models::open_input_file(settings.text.labels, "--labels");
  return settings;
}

void add_training_flags(CommandLine& line, const std::vector<std::string>& exclude) {
  pruner::add_training_options([&](const std::string& caption) -> po::options_description& {
    return line.group(caption);
  }, exclude);
}

void add_distributed_flags(CommandLine& line, pruner::DistributedOptions& o) {
  line.group(group::kDistributed).add_options()
      ("distributed", "join a data-parallel job (the environment `headprune launch`, torchrun or srun "
                      "set: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); each rank trains on its share of "
                      "every batch, rank 0 writes")
      ("backend", arg(&o.backend, "NAME"), "gloo (CPU, TCP) or nccl (GPUs); default by --device")
      ("dist-timeout", arg(&o.timeout_seconds, "S", o.timeout_seconds),
       "seconds a rank waits for its peers (joining, and each step) before the job stops");
}

pruner::ProcessGroup join_if_distributed(const po::variables_map& vm, const pruner::DistributedOptions& o,
                                         const GlobalOptions& globals) {
  if (o.timeout_seconds < 1) throw UsageError("--dist-timeout must be at least 1 second");
  if (!vm.count("distributed")) {
    if (!o.backend.empty()) throw UsageError("--backend needs --distributed");
    if (const int world = pruner::DistributedEnvironment::launched_world_size(); world > 1)
      throw UsageError(fmt::format("WORLD_SIZE={} is set (a launcher started this process) but --distributed "
                                   "is not given: add --distributed, or unset WORLD_SIZE to train alone",
                                   world));
    return {};
  }
  auto group = pruner::ProcessGroup::join(o, globals.torch_device());
  if (!group.is_main() && log::level() != log::Level::kDebug) log::level() = log::Level::kError;
  log::info("joined the data-parallel job: {} ranks", group.world_size());
  return group;
}

void add_refit_flags(CommandLine& line, RefitFlags& f, const char* text, const char* rearrange_when) {
  line.group(group::kRefit).add_options()
      ("refit", arg(&f.method, "METHOD", f.method),
       fmt::format("after removing heads, refit each layer's attention output to the dense model's on {}, "
                   "in closed form (least squares, layer by layer): output = the output projection's weights "
                   "and bias (and the FFN output projection's, when FFN neurons were removed), scale = one "
                   "factor per kept head, none = keep the weights as they are",
                   text).c_str())
      ("refit-sequences", arg(&f.sequences, "N", f.sequences), "calibration sequences the refit uses")
      ("refit-ridge", arg(&f.ridge, "R", f.ridge),
       "pull of the refit towards the weights it starts from, relative to the mean diagonal of each "
       "layer's normal matrix (0 = plain least squares)")
      ("rearrange",
       fmt::format("{}, let a kept and a removed head of a layer (and, with --prune heads,ffn, "
                   "a kept and a removed FFN block) trade places when that lowers the distillation loss on {} "
                   "(Kwon et al.'s mask rearrangement; every layer keeps its head count and FFN width; with GQA "
                   "whole KV groups trade places, and single heads only inside their group)",
                   rearrange_when, text).c_str())
      ("rearrange-sequences", arg(&f.rearrange_sequences, "N", f.rearrange_sequences),
       "calibration sequences the rearrangement scores swaps on");
}

pruner::RearrangeOptions rearrange_options(const RefitFlags& f, const po::variables_map& vm,
                                           const torch::Device& device) {
  pruner::RearrangeOptions o;
  o.enabled = vm.count("rearrange") > 0;
  if (!o.enabled && vm.count("rearrange-sequences") && !vm["rearrange-sequences"].defaulted())
    throw UsageError("--rearrange-sequences has no effect without --rearrange");
  if (f.rearrange_sequences < 1) throw UsageError("--rearrange-sequences must be at least 1");
  o.max_sequences = f.rearrange_sequences;
  o.device = device;
  return o;
}

pruner::RefitOptions refit_options(const RefitFlags& f, const po::variables_map& vm, const torch::Device& device) {
  pruner::RefitOptions o;
  o.method = pruner::parse_refit_method(f.method, "--refit");
  for (const char* flag : {"refit-sequences", "refit-ridge"})
    if (o.method == pruner::RefitMethod::kNone && vm.count(flag) && !vm[flag].defaulted())
      throw UsageError(fmt::format("--{} has no effect without --refit scale or --refit output", flag));
  if (f.sequences < 1) throw UsageError("--refit-sequences must be at least 1");
  o.max_sequences = f.sequences;
  if (!(f.ridge >= 0) || !std::isfinite(f.ridge)) throw UsageError("--refit-ridge must be a finite number >= 0");
  o.ridge = f.ridge;
  o.device = device;
  return o;
}

void add_prune_flags(CommandLine& line, PruneFlags& f, std::string& out, const char* out_help) {
  for (const char* caption : {group::kRequired, group::kTarget, group::kOutput, group::kTraining,
                              group::kText, group::kRefit, group::kBench, group::kResume, group::kAdvanced})
    line.group(caption);  // the order --help lists them in
  line.group(group::kRequired).add_options()("out,o", arg(&out, "DIR")->required(), out_help);
  line.group(group::kOutput).add_options()
      ("force", "replace what an earlier run wrote in --out (only that: any other file there stops the run, named)")
      ("no-fold", "keep kept heads at gate 1 instead of folding their gate values")
      ("onnx", "also write onnx/model.onnx (the pruned model for ONNX Runtime, as export-onnx)")
      ("gguf", "also write model.gguf (the pruned LLaMA model for llama.cpp, F32, as export-gguf)")
      ("json", "print the result as JSON on stdout")
      ("analyze", "name each head's role on the held-out text (as `headprune heads`) and store it "
                  "in headprune/head_roles.*; `report` then shows the roles of kept and removed heads")
      ("analyze-conllu", arg(&f.analyze_conllu, "FILE"),
       "also analyse on this CoNLL-U treebank, for the syntactic roles (implies --analyze)");
  add_refit_flags(line, f.refit, "the training text (its training share)",
                  "before removing heads (with --train-weights: before the weights fine-tune on the mask)");
  line.group(group::kResume).add_options()
      ("resume", "continue the gate training of an interrupted run with the same --out");
  line.group(group::kBench).add_options()
      ("no-bench", "skip the benchmark stage")
      ("bench-batch-size", arg(&f.batches, "N,...", f.batches), "benchmark batch sizes")
      ("bench-seq-len", arg(&f.seqs, "N,...", f.seqs), "benchmark sequence lengths (tokens)");
  line.alias("--bench-batch", "--bench-batch-size").alias("--bench-seq", "--bench-seq-len");
}

namespace {

/// A latency budget is checked by the benchmark on the exported model: at its shape.
void require_latency_shape(pruner::PruneJobOptions& job) {
  if (!job.bench)
    throw UsageError("--target-latency is checked by benchmarking the pruned model at --latency-shape: drop --no-bench");
  auto add = [](std::vector<int64_t>& list, int64_t value) {
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
  };
  add(job.bench_options.batches, job.training.latency_batch_size);
  add(job.bench_options.seqs, job.training.latency_seq_len);
}

}  // namespace

pruner::PruneJobOptions prune_job_options(const PruneFlags& prune, const po::variables_map& vm,
                                          const GlobalOptions& globals, const std::string& model,
                                          const std::string& out) {
  const auto settings = training_settings(vm, globals);
  pruner::PruneJobOptions job;
  job.training = settings.training;
  job.training.resume = vm.count("resume") > 0;
  job.onnx = vm.count("onnx") > 0;
  job.gguf = vm.count("gguf") > 0;
  job.analyze = vm.count("analyze") > 0 || !prune.analyze_conllu.empty();
  job.analyze_conllu = prune.analyze_conllu;
  job.corpus = settings.corpus;
  job.model = model;
  job.text = settings.text;
  job.out = out;
  job.force = vm.count("force") > 0;
  job.fold_gates = !vm.count("no-fold");
  job.bench = !vm.count("no-bench");
  job.bench_options.batches = parse_positive_list(prune.batches, "--bench-batch-size");
  job.bench_options.seqs = parse_positive_list(prune.seqs, "--bench-seq-len");
  job.bench_options.device = job.training.device;
  if (job.training.target_latency) require_latency_shape(job);
  job.refit = refit_options(prune.refit, vm, job.training.device);
  job.refit.batch_size = job.training.batch_size;
  job.rearrange = rearrange_options(prune.refit, vm, job.training.device);
  job.rearrange.fold_gates = job.fold_gates;
  return job;
}

}  // namespace headprune::cli
