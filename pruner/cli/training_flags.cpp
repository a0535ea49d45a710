#include "pruner/cli/training_flags.h"

#include <cmath>

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/log.h"

namespace headprune::cli {

void add_training_flags(po::options_description& desc, TrainingFlags& f) {
  desc.add_options()
      ("data", po::value<std::vector<std::string>>(&f.data)->required()->multitoken(),
       "training text file(s): UTF-8, one document or sentence per line (or see --paragraphs)")
      ("target-sparsity", po::value<double>(&f.target_sparsity),
       "fraction to remove, in [0,1): trained by a Lagrangian and met exactly by the final mask")
      ("l0-lambda", po::value<double>(&f.l0_lambda),
       "instead of a target: fixed L0 penalty lambda * sum P(gate != 0) (Voita et al. 2019)")
      ("sparsity-unit", po::value<std::string>(&f.unit)->default_value("heads"),
       "what --target-sparsity counts: heads, attention-params or flops")
      ("steps", po::value<int64_t>(&f.steps)->default_value(300), "training steps")
      ("batch-size", po::value<std::size_t>(&f.batch_size)->default_value(32), "sequences per step")
      ("max-length", po::value<std::size_t>(&f.max_length)->default_value(128),
       "tokens per sequence (longer lines are truncated)")
      ("max-lines", po::value<std::size_t>(&f.max_lines)->default_value(0),
       "use at most this many corpus documents (0 = all)")
      ("paragraphs", po::bool_switch(&f.paragraphs), "a document is a paragraph (lines up to a blank line or a '%' line, as in "
       "fortune files), not a single line")
      ("holdout", real_value(&f.holdout, 0.1),
       "share of lines held out for measuring fidelity")
      ("lr", real_value(&f.lr, 0.1), "learning rate of log_alpha (AdamW)")
      ("lambda-lr", real_value(&f.lambda_lr, 0.1),
       "step size of the Lagrange multipliers (plain gradient ascent)")
      ("warmup-steps", po::value<int64_t>(&f.warmup)->default_value(-1),
       "steps over which the target ramps up from 0 (-1 = 40% of --steps)")
      ("beta", real_value(&f.beta, 2.0 / 3.0),
       "hard-concrete temperature (Louizos 2/3; Voita et al. 0.33)")
      ("log-alpha-init", real_value(&f.log_alpha_init, 3.0),
       "initial log_alpha of every gate (3 = almost fully open)")
      ("gate-rule", po::value<std::string>(&f.rule)->default_value("louizos"),
       "deterministic gate: louizos (clip(sigmoid(log_alpha)(zeta-gamma)+gamma)) or cofi")
      ("min-heads-per-layer", po::value<int64_t>(&f.min_heads)->default_value(1),
       "every layer keeps at least this many heads")
      ("gqa-mode", po::value<std::string>(&f.gqa_mode)->default_value("uniform"),
       "grouped-query attention (LLaMA with num_key_value_heads < num_attention_heads): "
       "'uniform' removes query heads one per KV group at a time so every group of a layer "
       "keeps the same number (HF-compatible), 'groups' removes whole KV groups, 'none' ignores "
       "groups (headprune-only checkpoints); no effect on models without GQA")
      ("allow-empty-layers", "let layers lose all their heads (sets --min-heads-per-layer 0; "
       "older transformers versions cannot load such a checkpoint)")
      ("embedding-weight", real_value(&f.embedding_weight, 1.0),
       "weight of the sentence-embedding term of the distillation loss")
      ("train-weights", "after the gates are trained and the mask fixed, fine-tune the model's "
                        "weights by the same distillation (default: only the gates train; the "
                        "kept weights stay the source's)")
      ("finetune-steps", po::value<int64_t>(&f.finetune_steps)->default_value(200),
       "steps of weight fine-tuning with --train-weights")
      ("weights-lr", real_value(&f.weights_lr, 1e-4),
       "AdamW learning rate of the weights with --train-weights")
      ("teacher-cache-mib", po::value<int64_t>(&f.teacher_cache_mib)->default_value(2048),
       "memory for caching the frozen teacher's outputs between epochs (0 = off)")
      ("log-every", po::value<int64_t>(&f.log_every)->default_value(10), "progress line every N steps")
      ("save-every", po::value<int64_t>(&f.save_every)->default_value(50),
       "snapshot for --resume every N steps (0 = never)");
}

pruner::GateTrainingOptions training_options(const TrainingFlags& f, const po::variables_map& vm,
                                             const GlobalOptions& globals) {
  const bool has_target = vm.count("target-sparsity"), has_lambda = vm.count("l0-lambda");
  if (has_target == has_lambda)
    throw UsageError("give exactly one of --target-sparsity S or --l0-lambda X");
  pruner::GateTrainingOptions o;
  if (has_target) {
    if (!(f.target_sparsity >= 0 && f.target_sparsity < 1))
      throw UsageError(fmt::format("--target-sparsity {} is outside [0, 1)", f.target_sparsity));
    o.target_sparsity = f.target_sparsity;
  } else {
    if (!(f.l0_lambda >= 0)) throw UsageError("--l0-lambda must be >= 0");
    o.l0_lambda = f.l0_lambda;
  }
  if (f.steps < 1) throw UsageError("--steps must be >= 1");
  if (f.batch_size < 1) throw UsageError("--batch-size must be >= 1");
  if (f.max_length < 3) throw UsageError("--max-length must be >= 3");
  if (!(f.holdout > 0 && f.holdout < 1)) throw UsageError("--holdout must be in (0, 1)");
  if (!(f.lr > 0) || !(f.lambda_lr > 0)) throw UsageError("--lr and --lambda-lr must be > 0");
  if (!(f.weights_lr > 0) || !std::isfinite(f.weights_lr)) throw UsageError("--weights-lr must be > 0");
  if (vm.count("train-weights") && f.finetune_steps < 1)
    throw UsageError("--finetune-steps must be >= 1 with --train-weights");
  if (!vm.count("train-weights") && !vm["finetune-steps"].defaulted())
    log::warn("--finetune-steps has no effect without --train-weights");
  if (!(f.beta > 0)) throw UsageError("--beta must be > 0");
  if (f.log_every < 1) throw UsageError("--log-every must be >= 1");
  if (f.min_heads < 0) throw UsageError("--min-heads-per-layer must be >= 0");
  o.unit = gates::parse_unit(f.unit);
  o.steps = f.steps;
  o.batch_size = f.batch_size;
  o.flops_seq_len = static_cast<int64_t>(f.max_length);
  o.learning_rate = f.lr;
  o.lambda_learning_rate = f.lambda_lr;
  o.warmup_steps = f.warmup;
  o.gate.beta = f.beta;
  o.gate.log_alpha_init = f.log_alpha_init;
  o.rule = gates::parse_rule(f.rule);
  try {
    o.constraints.group_rule = gates::parse_group_rule(f.gqa_mode);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  o.constraints.min_heads_per_layer = vm.count("allow-empty-layers") ? 0 : f.min_heads;
  if (vm.count("allow-empty-layers") && !vm["min-heads-per-layer"].defaulted())
    o.constraints.min_heads_per_layer = f.min_heads;
  o.embedding_weight = f.embedding_weight;
  o.train_weights = vm.count("train-weights") > 0;
  o.weights_learning_rate = f.weights_lr;
  o.finetune_steps = f.finetune_steps;
  o.log_every = f.log_every;
  if (f.teacher_cache_mib < 0) throw UsageError("--teacher-cache-mib must be >= 0");
  o.teacher_cache_mib = f.teacher_cache_mib;
  o.save_every = f.save_every;
  o.seed = globals.seed;
  o.device = globals.torch_device();
  return o;
}

void add_prune_flags(po::options_description& desc, PruneFlags& f) {
  desc.add_options()
      ("force", "replace --out if it exists and is not empty")
      ("resume", "continue the gate training of an interrupted run with the same --out")
      ("no-fold", "keep kept heads at gate 1 instead of folding their gate values")
      ("no-bench", "skip the benchmark stage")
      ("bench-batch", po::value<std::string>(&f.batches)->default_value(f.batches), "benchmark batch sizes")
      ("bench-seq", po::value<std::string>(&f.seqs)->default_value(f.seqs), "benchmark sequence lengths");
}

pruner::PruneJobOptions prune_job_options(const TrainingFlags& flags, const PruneFlags& prune,
                                          const po::variables_map& vm, const GlobalOptions& globals,
                                          const std::string& model, const std::string& out) {
  pruner::PruneJobOptions job;
  job.training = training_options(flags, vm, globals);
  job.training.resume = vm.count("resume") > 0;
  job.corpus = corpus_options(flags, globals);
  job.model = model;
  job.data.assign(flags.data.begin(), flags.data.end());
  job.out = out;
  job.force = vm.count("force") > 0;
  job.fold_gates = !vm.count("no-fold");
  job.bench = !vm.count("no-bench");
  job.bench_options.batches = parse_positive_list(prune.batches, "--bench-batch");
  job.bench_options.seqs = parse_positive_list(prune.seqs, "--bench-seq");
  job.bench_options.device = job.training.device;
  return job;
}

pruner::CorpusOptions corpus_options(const TrainingFlags& f, const GlobalOptions& globals) {
  pruner::CorpusOptions c;
  c.max_length = f.max_length;
  c.holdout_fraction = f.holdout;
  c.max_lines = f.max_lines;
  c.seed = globals.seed;
  c.paragraphs = f.paragraphs;
  return c;
}

}  // namespace headprune::cli
