#include <iostream>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/dtype_option.h"
#include "pruner/measure/bench.h"
#include "pruner/measure/decode_bench.h"

namespace headprune::cli {
namespace {

/// The grid flags as typed, before they are parsed into a forward or a decode grid.
struct BenchGrid {
  std::string batches = "1,8,32", seqs = "32,128,512", contexts = "512,2048";
  int64_t new_tokens = 32;
};

/// bench --decode's options from the flags: the forward grid's --seq-len is refused, the batch
/// sizes default to 1, the stopping flags keep their meaning per rep (a prefill and its tokens).
/// @throws UsageError for --seq-len or a bad list.
pruner::DecodeBenchOptions decode_options(const BenchGrid& grid, const pruner::BenchOptions& forward,
                                          const po::variables_map& vm) {
  if (!vm["seq-len"].defaulted())
    throw UsageError("--seq-len is the forward benchmark's; with --decode give --context N,... (prompt tokens)");
  pruner::DecodeBenchOptions o;
  o.batches = vm["batch-size"].defaulted() ? std::vector<int64_t>{1} : parse_positive_list(grid.batches, "--batch-size");
  o.contexts = parse_positive_list(grid.contexts, "--context");
  if (grid.new_tokens < 1) throw UsageError("--new-tokens must be >= 1");
  o.new_tokens = grid.new_tokens;
  const auto given = [&](const char* flag) { return !vm[flag].defaulted(); };
  if (given("warmup")) o.repeat.warmup = forward.warmup;
  if (given("min-reps")) o.repeat.min_reps = forward.min_reps;
  if (given("max-reps")) o.repeat.max_reps = forward.max_reps;
  if (given("max-seconds")) o.repeat.max_seconds = forward.max_seconds_per_shape;
  if (o.repeat.min_reps < 1 || o.repeat.max_reps < o.repeat.min_reps)
    throw UsageError("--min-reps must be >= 1 and --max-reps >= --min-reps (with --decode they default to 3 and 10)");
  o.device = forward.device;
  return o;
}

}  // namespace

int run_bench(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("bench", "bench DENSE PRUNED [--batch-size 1,8,32] [--seq-len 32,128,512] [--decode --context "
                            "512,2048] [--json]");
  std::string dense_dir, pruned_dir, out;
  BenchGrid grid;
  pruner::BenchOptions o;
  DtypeOption dtype;
  line.positional("dense", "DENSE", &dense_dir, "dense checkpoint folder");
  line.positional("pruned", "PRUNED", &pruned_dir, "pruned checkpoint folder");
  line.group(group::kBench).add_options()
      ("batch-size", arg(&grid.batches, "N,...", grid.batches), "batch sizes, comma-separated (--decode: 1 unless given)")
      ("seq-len", arg(&grid.seqs, "N,...", grid.seqs), "sequence lengths in tokens, comma-separated")
      ("decode", "time generation with the KV cache instead of one forward pass: prefill --context tokens, "
                 "then --new-tokens one at a time (decoders)")
      ("context", arg(&grid.contexts, "N,...", grid.contexts), "with --decode: prompt lengths in tokens, comma-separated")
      ("new-tokens", arg(&grid.new_tokens, "N", grid.new_tokens), "with --decode: tokens decoded after each prefill")
      ("warmup", arg(&o.warmup, "N", o.warmup), "untimed runs per shape (--decode: 1)")
      ("min-reps", arg(&o.min_reps, "N", o.min_reps), "timed runs per shape, at least (--decode: 3)")
      ("max-reps", arg(&o.max_reps, "N", o.max_reps), "timed runs per shape, at most (--decode: 10)")
      ("max-seconds", arg(&o.max_seconds_per_shape, "SECONDS", o.max_seconds_per_shape),
       "stop repeating a shape after this long (--decode: 120)");
  dtype.add_to(line.group(group::kBench));
  line.group(group::kOutput).add_options()
      ("json", "print JSON instead of the table")
      ("json-file", arg(&out, "FILE"), "also write the JSON to this file");
  line.alias("--batch", "--batch-size").alias("--seq", "--seq-len").alias("--out", "--json-file");
  line.example("bench .cache/models/all-MiniLM-L6-v2 out/minilm-50", "the default grid, 9 shapes")
      .example("bench DENSE PRUNED --batch-size 1 --seq-len 128 --json-file bench.json",
               "one shape, the JSON kept in bench.json")
      .example("bench DENSE PRUNED --decode --context 512,2048 --new-tokens 32",
               "decoding with the KV cache after 512- and 2048-token prompts: ms per token, KV cache bytes");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  for (const auto* flag : {"context", "new-tokens"})
    if (!vm.count("decode") && !vm[flag].defaulted())
      throw UsageError(fmt::format("--{} needs --decode", flag));
  o.device = globals.torch_device();
  const auto decode = vm.count("decode") ? std::optional(decode_options(grid, o, vm)) : std::nullopt;
  if (!decode) {
    if (o.min_reps < 1 || o.max_reps < o.min_reps)
      throw UsageError("--min-reps must be >= 1 and --max-reps >= --min-reps");
    o.batches = parse_positive_list(grid.batches, "--batch-size");
    o.seqs = parse_positive_list(grid.seqs, "--seq-len");
  }
  dtype.scalar_type();  // a bad --dtype is a usage error before anything loads
  auto dense = models::load_checkpoint(dense_dir, o.device);
  auto pruned = models::load_checkpoint(pruned_dir, o.device);
  dtype.apply(dense);
  dtype.apply(pruned);
  const auto finish = [&](const auto& report) {
    auto json = report.to_json();
    json["dense"] = dense_dir;
    json["pruned"] = pruned_dir;
    json["dtype"] = dtype.name;
    emit_result(json, report.to_text(), out, vm.count("json") > 0);
  };
  if (decode) finish(pruner::run_decode_bench(*dense.model, *pruned.model, *decode));
  else finish(pruner::run_bench(*dense.model, *pruned.model, o));
  return 0;
}

}  // namespace headprune::cli
