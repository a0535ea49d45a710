// Command-line flags shared by `train-gates`, `prune` and `sweep`. The training flags are
// declared once, in pruner/training/training_options.cpp's table.
#pragma once

#include <string>

#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/distributed/process_group.h"
#include "pruner/jobs/prune_job.h"
#include "pruner/training/training_options.h"

namespace headprune::cli {

/// Settings from the parsed training flags, with the global --seed and --device; every --data
/// file is checked (exists, is a file, can be read) before anything loads.
/// @throws headprune::UsageError on a bad value or combination, headprune::Error on a data file.
pruner::TrainingSettings training_settings(const po::variables_map& vm, const GlobalOptions& globals);

/// Declares the training table's flags on `line`, by group, except those in `exclude`.
void add_training_flags(CommandLine& line, const std::vector<std::string>& exclude = {});

/// --distributed, --backend and --dist-timeout (train-gates and prune).
void add_distributed_flags(CommandLine& line, pruner::DistributedOptions& options);

/// With --distributed, joins the job the launcher's environment describes (ranks other than 0
/// then log errors only); else the single process. A process a launcher started (WORLD_SIZE > 1)
/// without --distributed is refused: it would train alone and write where the others do.
/// @throws headprune::UsageError for that, headprune::Error when joining fails.
pruner::ProcessGroup join_if_distributed(const po::variables_map& vm, const pruner::DistributedOptions& options,
                                         const GlobalOptions& globals);

/// --refit, --refit-sequences, --refit-ridge, --rearrange and --rearrange-sequences (prune,
/// sweep, apply).
struct RefitFlags {
  std::string method = "none";
  std::size_t sequences = 256;
  double ridge = 1e-3;
  std::size_t rearrange_sequences = 64;
};

/// Declares the refit and rearrangement flags (group "Recovery after removal"); `text` says
/// where the calibration text comes from for this command, `rearrange_when` when --rearrange runs.
void add_refit_flags(CommandLine& line, RefitFlags& flags, const char* text, const char* rearrange_when);

/// The refit settings from parsed flags. @throws headprune::UsageError on a bad value, or on
/// --refit-sequences / --refit-ridge given without a refit method (they would do nothing).
pruner::RefitOptions refit_options(const RefitFlags& flags, const po::variables_map& vm, const torch::Device& device);

/// The mask-rearrangement settings from parsed flags (fold_gates and batch_size are the
/// caller's). @throws headprune::UsageError for --rearrange-sequences 0, or given without
/// --rearrange.
pruner::RearrangeOptions rearrange_options(const RefitFlags& flags, const po::variables_map& vm,
                                           const torch::Device& device);

/// Flags of the prune job beyond training (shared by `prune` and `sweep`).
struct PruneFlags {
  std::string batches = "1,32";
  std::string seqs = "128";
  std::string analyze_conllu;
  RefitFlags refit;
};

/// Adds -o/--out (folder, with `out_help`), --force, --resume, --no-fold, --no-bench,
/// --bench-batch-size, --bench-seq-len (and their old spellings).
void add_prune_flags(CommandLine& line, PruneFlags& flags, std::string& out, const char* out_help);

/// Builds a prune job (model, data, out, training, corpus, bench) from parsed flags.
/// @throws headprune::UsageError on bad values.
pruner::PruneJobOptions prune_job_options(const PruneFlags& prune, const po::variables_map& vm,
                                          const GlobalOptions& globals, const std::string& model,
                                          const std::string& out);

}  // namespace headprune::cli
