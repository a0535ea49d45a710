#include "pruner/cli/training_flags.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/log.h"

namespace headprune::cli {

pruner::TrainingSettings training_settings(const po::variables_map& vm, const GlobalOptions& globals) {
  return pruner::training_settings(vm, globals.seed, globals.torch_device());
}

void add_prune_flags(po::options_description& desc, PruneFlags& f) {
  desc.add_options()
      ("force", "replace what an earlier run wrote in --out (other files there are kept, and named)")
      ("resume", "continue the gate training of an interrupted run with the same --out")
      ("no-fold", "keep kept heads at gate 1 instead of folding their gate values")
      ("no-bench", "skip the benchmark stage")
      ("bench-batch", po::value<std::string>(&f.batches)->default_value(f.batches), "benchmark batch sizes")
      ("bench-seq", po::value<std::string>(&f.seqs)->default_value(f.seqs), "benchmark sequence lengths");
}

pruner::PruneJobOptions prune_job_options(const PruneFlags& prune, const po::variables_map& vm,
                                          const GlobalOptions& globals, const std::string& model,
                                          const std::string& out) {
  const auto settings = training_settings(vm, globals);
  pruner::PruneJobOptions job;
  job.training = settings.training;
  job.training.resume = vm.count("resume") > 0;
  job.corpus = settings.corpus;
  job.model = model;
  job.data.assign(settings.data.begin(), settings.data.end());
  job.out = out;
  job.force = vm.count("force") > 0;
  job.fold_gates = !vm.count("no-fold");
  job.bench = !vm.count("no-bench");
  job.bench_options.batches = parse_positive_list(prune.batches, "--bench-batch");
  job.bench_options.seqs = parse_positive_list(prune.seqs, "--bench-seq");
  job.bench_options.device = job.training.device;
  return job;
}

}  // namespace headprune::cli
