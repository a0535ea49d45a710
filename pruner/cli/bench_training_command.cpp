#include <iostream>

#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/jobs/training_bench.h"
#include "pruner/log.h"
#include "pruner/training/training_options.h"

namespace headprune::cli {

int run_bench_training(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("bench-training", "bench-training MODEL [--batch-size 32] [--seq-len 128] [--reps 5] [--json]");
  std::string model, out;
  pruner::TrainingBenchOptions o;
  line.positional("model", "MODEL", &model, "checkpoint folder");
  line.group(group::kBench).add_options()
      ("batch-size", arg(&o.batch, "N", o.batch), "sequences per step")
      ("seq-len", arg(&o.seq, "N", o.seq), "tokens per sequence")
      ("warmup", arg(&o.warmup, "N", o.warmup), "untimed steps of each kind")
      ("reps", arg(&o.reps, "N", o.reps), "timed steps of each kind")
      ("kl-chunk-tokens", arg(&o.kl_chunk_tokens, "N", o.kl_chunk_tokens),
       "language models: tokens whose logits exist at a time in the gate steps' KL, as train-gates takes it "
       "(0 = automatic, -1 = whole batches)")
      ("checkpoint-layers", arg(&o.checkpoint_layers, "MODE", o.checkpoint_layers),
       "activation checkpointing in the gate steps, as train-gates takes it: on, off, or auto")
      ("float32-weights", "hold every weight in float32, as train-gates --float32-weights does (default: a "
                          "bfloat16/float16 checkpoint's matrices stay in the file's dtype)")
      ("memory", "also run each kind once more for its peak resident memory: weights, optimiser state, "
                 "activations (Linux)");
  line.group(group::kOutput).add_options()
      ("json", "print JSON instead of the table")
      ("json-file", arg(&out, "FILE"), "also write the JSON to this file");
  line.alias("--batch", "--batch-size").alias("--seq", "--seq-len").alias("--out", "--json-file");
  line.example("bench-training .cache/models/all-MiniLM-L6-v2",
               "how much a gate-training step costs against a plain forward+backward");
  line.example("bench-training llama-1b --batch-size 4 --seq-len 512 --reps 1 --warmup 0 --memory",
               "what one gate-training step of a 1B decoder takes in time and resident memory");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (o.batch < 1 || o.seq < 1 || o.reps < 1 || o.warmup < 0 || o.kl_chunk_tokens < -1)
    throw UsageError("--batch-size, --seq-len and --reps must be >= 1, --warmup >= 0, --kl-chunk-tokens >= -1");
  if (!pruner::GateTrainingOptions::is_checkpoint_setting(o.checkpoint_layers))
    throw UsageError(fmt::format("--checkpoint-layers {}: expected on, off or auto", o.checkpoint_layers));
  o.memory = vm.count("memory") > 0;
  o.device = globals.torch_device();
  log::info("loading {}", model);
  auto ckpt = models::load_checkpoint(model, o.device, vm.count("float32-weights") ? models::WeightStorage::float32
                                                                                 : models::WeightStorage::source);
  auto report = pruner::run_training_bench(ckpt, o);
  auto json = report.to_json();
  json["model"] = model;
  emit_result(json, report.to_text(), out, vm.count("json") > 0);
  return 0;
}

}  // namespace headprune::cli
