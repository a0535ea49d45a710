// Command-line flags shared by `train-gates`, `prune` and `sweep`. The training flags are
// declared once, in pruner/training/training_options.cpp's table.
#pragma once

#include <string>

#include "pruner/cli/command.h"
#include "pruner/jobs/prune_job.h"
#include "pruner/training/training_options.h"

namespace headprune::cli {

/// Settings from the parsed training flags, with the global --seed and --device.
/// @throws headprune::UsageError on a bad value or combination.
pruner::TrainingSettings training_settings(const po::variables_map& vm, const GlobalOptions& globals);

/// Flags of the prune job beyond training (shared by `prune` and `sweep`).
struct PruneFlags {
  std::string batches = "1,32";
  std::string seqs = "128";
};

/// Adds --force, --resume, --no-fold, --no-bench, --bench-batch, --bench-seq.
void add_prune_flags(po::options_description& desc, PruneFlags& flags);

/// Builds a prune job (model, data, out, training, corpus, bench) from parsed flags.
/// @throws headprune::UsageError on bad values.
pruner::PruneJobOptions prune_job_options(const PruneFlags& prune, const po::variables_map& vm,
                                          const GlobalOptions& globals, const std::string& model,
                                          const std::string& out);

}  // namespace headprune::cli
