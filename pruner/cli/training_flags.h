// Command-line flags shared by `train-gates`, `prune` and `sweep`.
#pragma once

#include <optional>
#include <string>

#include "pruner/cli/command.h"
#include "pruner/corpus.h"
#include "pruner/gate_training.h"
#include "pruner/prune_job.h"

namespace headprune::cli {

/// Raw flag values, bound to a po::options_description by add_training_flags.
struct TrainingFlags {
  std::vector<std::string> data;
  double target_sparsity = -1;
  double l0_lambda = -1;
  std::string unit = "heads";
  int64_t steps = 300;
  std::size_t batch_size = 32;
  std::size_t max_length = 128;
  std::size_t max_lines = 0;
  double holdout = 0.1;
  double lr = 0.1;
  double lambda_lr = 0.1;
  int64_t warmup = -1;
  double beta = 2.0 / 3.0;
  double log_alpha_init = 3.0;
  std::string rule = "louizos";
  int64_t min_heads = 1;
  double embedding_weight = 1.0;
  double weights_lr = 1e-4;
  int64_t finetune_steps = 200;
  std::string gqa_mode = "uniform";
  int64_t log_every = 10;
  int64_t save_every = 50;
  bool paragraphs = false;
  int64_t teacher_cache_mib = 2048;
};

/// Adds --data, --target-sparsity, --l0-lambda, --sparsity-unit, --steps, --batch-size,
/// --max-length, --max-lines, --holdout, --lr, --lambda-lr, --warmup-steps, --beta,
/// --log-alpha-init, --gate-rule, --min-heads-per-layer, --allow-empty-layers,
/// --embedding-weight, --train-weights, --weights-lr, --log-every, --save-every.
void add_training_flags(po::options_description& desc, TrainingFlags& flags);

/// Checks the flags (exactly one of --target-sparsity / --l0-lambda, ranges) and builds the
/// training options. @throws headprune::UsageError on a bad combination or value.
pruner::GateTrainingOptions training_options(const TrainingFlags& flags, const po::variables_map& vm,
                                             const GlobalOptions& globals);

/// Flags of the prune job beyond training (shared by `prune` and `sweep`).
struct PruneFlags {
  std::string batches = "1,32";
  std::string seqs = "128";
};

/// Adds --force, --resume, --no-fold, --no-bench, --bench-batch, --bench-seq.
void add_prune_flags(po::options_description& desc, PruneFlags& flags);

/// Builds a prune job (model, data, out, training, corpus, bench) from parsed flags.
/// @throws headprune::UsageError on bad values.
pruner::PruneJobOptions prune_job_options(const TrainingFlags& training, const PruneFlags& prune,
                                          const po::variables_map& vm, const GlobalOptions& globals,
                                          const std::string& model, const std::string& out);

/// Corpus options from the flags.
pruner::CorpusOptions corpus_options(const TrainingFlags& flags, const GlobalOptions& globals);

}  // namespace headprune::cli
