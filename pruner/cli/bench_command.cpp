#include <iostream>

#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/dtype_option.h"
#include "pruner/measure/bench.h"

namespace headprune::cli {

int run_bench(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("bench", "bench DENSE PRUNED [--batch-size 1,8,32] [--seq-len 32,128,512] [--json]");
  std::string dense_dir, pruned_dir, batches = "1,8,32", seqs = "32,128,512", out;
  pruner::BenchOptions o;
  DtypeOption dtype;
  line.positional("dense", "DENSE", &dense_dir, "dense checkpoint folder");
  line.positional("pruned", "PRUNED", &pruned_dir, "pruned checkpoint folder");
  line.group(group::kBench).add_options()
      ("batch-size", arg(&batches, "N,...", batches), "batch sizes, comma-separated")
      ("seq-len", arg(&seqs, "N,...", seqs), "sequence lengths in tokens, comma-separated")
      ("warmup", arg(&o.warmup, "N", o.warmup), "untimed runs per shape")
      ("min-reps", arg(&o.min_reps, "N", o.min_reps), "timed runs per shape, at least")
      ("max-reps", arg(&o.max_reps, "N", o.max_reps), "timed runs per shape, at most")
      ("max-seconds", arg(&o.max_seconds_per_shape, "SECONDS", o.max_seconds_per_shape),
       "stop repeating a shape after this long");
  dtype.add_to(line.group(group::kBench));
  line.group(group::kOutput).add_options()
      ("json", "print JSON instead of the table")
      ("json-file", arg(&out, "FILE"), "also write the JSON to this file");
  line.alias("--batch", "--batch-size").alias("--seq", "--seq-len").alias("--out", "--json-file");
  line.example("bench .cache/models/all-MiniLM-L6-v2 out/minilm-50", "the default grid, 9 shapes")
      .example("bench DENSE PRUNED --batch-size 1 --seq-len 128 --json-file bench.json",
               "one shape, the JSON kept in bench.json");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  o.batches = parse_positive_list(batches, "--batch-size");
  o.seqs = parse_positive_list(seqs, "--seq-len");
  if (o.min_reps < 1 || o.max_reps < o.min_reps)
    throw UsageError("--min-reps must be >= 1 and --max-reps >= --min-reps");
  dtype.scalar_type();  // a bad --dtype is a usage error before anything loads
  o.device = globals.torch_device();
  auto dense = models::load_checkpoint(dense_dir, o.device);
  auto pruned = models::load_checkpoint(pruned_dir, o.device);
  dtype.apply(dense);
  dtype.apply(pruned);
  auto report = pruner::run_bench(*dense.model, *pruned.model, o);
  auto json = report.to_json();
  json["dense"] = dense_dir;
  json["pruned"] = pruned_dir;
  json["dtype"] = dtype.name;
  emit_result(json, report.to_text(), out, vm.count("json") > 0);
  return 0;
}

}  // namespace headprune::cli
