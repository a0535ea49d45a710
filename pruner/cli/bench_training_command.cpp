#include <iostream>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "pruner/surgery/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/log.h"
#include "pruner/measure/training_bench.h"

namespace headprune::cli {

int run_bench_training(const std::vector<std::string>& args, const GlobalOptions& globals) {
  po::options_description desc("bench-training options");
  std::string model, out;
  pruner::TrainingBenchOptions o;
  desc.add_options()
      ("model", po::value<std::string>(&model)->required(), "checkpoint folder (positional)")
      ("batch", po::value<int64_t>(&o.batch)->default_value(o.batch), "sequences per step")
      ("seq", po::value<int64_t>(&o.seq)->default_value(o.seq), "tokens per sequence")
      ("warmup", po::value<int>(&o.warmup)->default_value(o.warmup), "untimed steps of each kind")
      ("reps", po::value<int>(&o.reps)->default_value(o.reps), "timed steps of each kind")
      ("json", "print JSON instead of the table")
      ("out", po::value<std::string>(&out), "also write the JSON to this file");
  po::variables_map vm;
  if (!parse_args(args, "headprune bench-training MODEL [--batch 32] [--seq 128] [--reps 5] [--json]",
                  desc, {"model"}, vm))
    return 0;
  if (o.batch < 1 || o.seq < 1 || o.reps < 1 || o.warmup < 0)
    throw UsageError("--batch, --seq and --reps must be >= 1, --warmup >= 0");
  o.device = globals.torch_device();
  log::info("loading {}", model);
  auto ckpt = models::load_checkpoint(model, o.device);
  auto report = pruner::run_training_bench(ckpt, o);
  auto json = report.to_json();
  json["model"] = model;
  emit_result(json, report.to_text(), out, vm.count("json") > 0);
  return 0;
}

}  // namespace headprune::cli
