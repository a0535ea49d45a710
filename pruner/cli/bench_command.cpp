#include <iostream>

#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "pruner/surgery/atomic_write.h"
#include "pruner/measure/bench.h"
#include "pruner/cli/command.h"

namespace headprune::cli {

int run_bench(const std::vector<std::string>& args, const GlobalOptions& globals) {
  po::options_description desc("bench options");
  std::string dense_dir, pruned_dir, batches = "1,8,32", seqs = "32,128,512", out;
  pruner::BenchOptions o;
  desc.add_options()
      ("dense", po::value<std::string>(&dense_dir)->required(), "dense checkpoint folder (positional)")
      ("pruned", po::value<std::string>(&pruned_dir)->required(), "pruned checkpoint folder (positional)")
      ("batch", po::value<std::string>(&batches)->default_value(batches), "batch sizes, comma-separated")
      ("seq", po::value<std::string>(&seqs)->default_value(seqs), "sequence lengths, comma-separated")
      ("warmup", po::value<int>(&o.warmup)->default_value(o.warmup), "untimed runs per shape")
      ("min-reps", po::value<int>(&o.min_reps)->default_value(o.min_reps), "timed runs per shape, at least")
      ("max-reps", po::value<int>(&o.max_reps)->default_value(o.max_reps), "timed runs per shape, at most")
      ("max-seconds", real_value(&o.max_seconds_per_shape, o.max_seconds_per_shape),
       "stop repeating a shape after this long")
      ("json", "print JSON instead of the table")
      ("out", po::value<std::string>(&out), "also write the JSON to this file");
  po::variables_map vm;
  if (!parse_args(args, "headprune bench DENSE PRUNED [--batch 1,8,32] [--seq 32,128,512] [--json]",
                  desc, {"dense", "pruned"}, vm))
    return 0;
  o.batches = parse_positive_list(batches, "--batch");
  o.seqs = parse_positive_list(seqs, "--seq");
  if (o.min_reps < 1 || o.max_reps < o.min_reps)
    throw UsageError("--min-reps must be >= 1 and --max-reps >= --min-reps");
  o.device = globals.torch_device();
  auto dense = models::load_checkpoint(dense_dir, o.device);
  auto pruned = models::load_checkpoint(pruned_dir, o.device);
  auto report = pruner::run_bench(*dense.model, *pruned.model, o);
  auto json = report.to_json();
  json["dense"] = dense_dir;
  json["pruned"] = pruned_dir;
  emit_result(json, report.to_text(), out, vm.count("json") > 0);
  return 0;
}

}  // namespace headprune::cli
