#include <iostream>

#include "models/errors.h"
#include "pruner/cli/command.h"
#include "pruner/cli/training_flags.h"
#include "pruner/jobs/sweep.h"

namespace headprune::cli {

int run_sweep(const std::vector<std::string>& args, const GlobalOptions& globals) {
  po::options_description desc("sweep options");
  std::string model, out, targets = "0.25,0.5,0.75", sts;
  PruneFlags prune;
  desc.add_options()
      ("model", po::value<std::string>(&model)->required(), "checkpoint folder (positional)")
      ("targets", po::value<std::string>(&targets)->default_value(targets),
       "sparsity targets, comma-separated; one gate-training run each")
      ("eval-sts", po::value<std::string>(&sts),
       "STS-Benchmark file: quality = Spearman x100 (else: embedding cosine to the dense model)")
      ("out", po::value<std::string>(&out)->required(), "sweep folder (target-XX/ + sweep.json/.txt/.svg)");
  add_prune_flags(desc, prune);
  pruner::add_training_options(desc);
  po::variables_map vm;
  if (!parse_args(args, "headprune sweep MODEL --data CORPUS --targets 0.25,0.5,0.75 [--eval-sts FILE] --out DIR",
                  desc, {"model"}, vm))
    return 0;
  if (vm.count("target-sparsity") || vm.count("l0-lambda"))
    throw UsageError("sweep takes --targets, not --target-sparsity / --l0-lambda");
  pruner::SweepOptions o;
  o.targets = parse_number_list(targets, "--targets");
  // The job template needs one target to validate its flags; each run sets its own.
  po::variables_map with_target = vm;
  with_target.insert({"target-sparsity", po::variable_value(o.targets.front(), false)});
  o.job = prune_job_options(prune, with_target, globals, model, out);
  o.out = out;
  if (!sts.empty()) o.sts = sts;
  pruner::run_sweep(o);
  std::cout << "sweep written to " << out << " (sweep.txt, sweep.json, sweep.svg)\n";
  return 0;
}

}  // namespace headprune::cli
