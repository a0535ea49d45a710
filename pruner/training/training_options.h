// Every setting of gate training, and the table that declares each of its command-line options
// once: flag, type, default, help, key in gates.json, and whether --resume needs the same value.
// The Boost.Program_options flags, the gates.json record and the resume check are all made
// from the table (training_options.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "gates/gate_kinds.h"
#include "gates/hard_concrete.h"
#include "gates/keep_mask.h"
#include "gates/sparsity.h"
#include "models/checkpoint.h"
#include "pruner/objectives/task_loss.h"
#include "pruner/text/corpus.h"
#include "pruner/text/training_text.h"

namespace headprune::pruner {

struct LatencyTable;  // pruner/measure/latency_table.h
struct GateState;     // pruner/records/gate_record.h

/// Every setting of a gate-training run (docs/cli.md lists the flags that set them).
struct GateTrainingOptions {
  int64_t steps = 300;
  std::size_t batch_size = 32;
  double learning_rate = 0.1;       ///< AdamW on log_alpha
  double lambda_learning_rate = 0.1;  ///< gradient-ascent (SGD) step on λ1, λ2 (docs/results.md)
  double lambda_damping = 20;  ///< κ of gates::Lagrangian: the pull vanishes 1/(2κ) past the target
  /// Target sparsity in [0, 1) (Lagrangian); unset = fixed penalty `l0_lambda`.
  std::optional<double> target_sparsity;
  /// A budget in parameters of the whole model, as given: "N" or "X%" of the dense model's
  /// (`--target-params`). Training turns it into a target in attention parameters
  /// (with_budget); the final mask then removes at least the cost it names.
  std::optional<std::string> target_params;
  /// A budget in forward FLOPs per token at flops_seq_len (--max-length): the share of the dense
  /// model's the pruned one may keep, in (0, 1) (`--target-flops X%`). Trained as a target in
  /// unit flops; the final mask removes at least the cost it names.
  std::optional<double> target_flops;
  /// A budget in latency per forward pass at latency_batch_size × latency_seq_len on this
  /// machine, as given: "MS" milliseconds or "X%" of the dense model's (`--target-latency`),
  /// priced by a latency table (pruner/measure/latency_table.h) that the job reads or measures
  /// (pruner/jobs/latency_measurement.h); trained in unit latency, the final mask's predicted
  /// latency stays within it.
  std::optional<std::string> target_latency;
  /// A budget in KV-cache bytes per token of a decoder, at 2 bytes a cached number (the F16 cache
  /// of llama.cpp and of HF's fp16 models), as given: "N" bytes or "X%" of the dense model's
  /// (`--target-kv-bytes`). Only whole KV groups shrink the cache: trained as a target in unit
  /// kv-cache with whole groups (gates::GroupRule::kWholeGroups); the final mask's cache stays
  /// within it.
  std::optional<std::string> target_kv_bytes;
  int64_t latency_batch_size = 1;  ///< --latency-shape B x S
  int64_t latency_seq_len = 128;
  std::string latency_table_file;  ///< --latency-table; empty = the default cache file
  std::shared_ptr<const LatencyTable> latency_table;  ///< with target_latency: set by the job (provide_latency_table)
  /// Whether a budget (target_params, target_flops, target_latency or target_kv_bytes) sets the
  /// target: the final mask must not exceed it.
  bool budget() const {
    return target_params.has_value() || target_flops.has_value() || target_latency.has_value() ||
           target_kv_bytes.has_value();
  }
  gates::SparsityUnit unit = gates::SparsityUnit::kHeads;
  int64_t flops_seq_len = 128;       ///< sequence length FLOPs are counted at (unit flops)
  double l0_lambda = 0.0;            ///< Voita et al.'s λ (fixed-penalty mode)
  int64_t warmup_steps = -1;         ///< target ramp length; -1 = 40% of steps
  /// Gate steps the run may add when the gates have not converged after `steps` (the test of
  /// gate_training.cpp's kConvergenceGap / kSeparation; not when the multipliers overshot the
  /// target), in blocks of a tenth of `steps`; -1 = as many as `steps` (at most twice the gate
  /// training), 0 = never.
  int64_t max_extra_steps = -1;
  gates::HardConcreteOptions gate;
  /// What the gates cover (--prune): heads, or heads and FFN neuron blocks of `ffn_block` neurons.
  gates::GateKinds kinds = gates::GateKinds::kHeads;
  int64_t ffn_block = 32;  ///< --ffn-block: FFN neurons per gate (1 = single neurons)
  bool gates_ffn() const { return gates::gates_ffn(kinds); }
  /// Whether each layer's attention and FFN also have one gate each over the whole sublayer.
  bool gates_sublayers() const { return kinds == gates::GateKinds::kHeadsFfnAndLayers; }
  gates::DeterministicRule rule = gates::DeterministicRule::kLouizos;
  gates::MaskConstraints constraints;
  double embedding_weight = 1.0;     ///< weight of the sentence-embedding loss term
  /// Weight of the layer-wise distillation term (pruner/objectives/distillation.h,
  /// layer_distillation; CoFi's L_layer); 0 = off.
  double distill_layers = 0;
  /// Labelled text (--labels): weight w of the labels' cross-entropy in
  /// w · CE + (1 − w) · distillation (pruner/objectives/task_loss.h); unused without labels.
  double label_weight = kDefaultLabelWeight;
  /// After the gate phase, fix the mask and fine-tune the weights by the same distillation for
  /// `finetune_steps` more steps (AdamW, `weights_learning_rate`, weight decay 0.01).
  bool train_weights = false;
  /// Hold every weight in float32 (--float32-weights). Off: a bfloat16/float16 checkpoint's
  /// matrices stay in the file's dtype, widened per use (models::WeightStorage::source): the
  /// same numbers with half the weight memory.
  bool float32_weights = false;
  int64_t finetune_steps = 200;
  double weights_learning_rate = 1e-4;
  /// With train_weights: fine-tune only the layers that lost a head or an FFN neuron (their
  /// attention, FFN and norms; AttentionModel::layer_parameters), the rest frozen as the source's
  /// (--finetune-pruned-layers). False: every weight.
  bool finetune_pruned_layers = false;
  /// With train_weights: changes the mask fixed at the end of the gate phase, once, before the
  /// weights train on it (the prune job's --rearrange: pruner/jobs/prune_job.cpp). Every rank
  /// calls it; rank 0's mask is the one kept, and is saved in the gates folder so that a run
  /// resumed in the weights phase trains on the same mask. Null: the mask as the gates left it.
  std::function<void(GateState&)> fix_mask;
  /// Activation checkpointing per layer (--checkpoint-layers): "on", "off", or "auto" = on for
  /// models of at least kCheckpointLayersFrom parameters when LibTorch has no fused attention
  /// kernel (models/attention_kernel.h; Debian's 1.13), whose every layer then keeps its
  /// attention probabilities for backward (models/layer_checkpoint.h; docs/results.md).
  std::string checkpoint_layers = "auto";
  static constexpr int64_t kCheckpointLayersFrom = 1'000'000'000;
  /// Whether `setting` checkpoints the layers of a model of `parameters` parameters
  /// (models/model_size.h parameter_count).
  static bool checkpoints(const std::string& setting, int64_t parameters);
  /// Whether `setting` is one --checkpoint-layers takes: on, off or auto.
  static bool is_checkpoint_setting(const std::string& setting) {
    return setting == "on" || setting == "off" || setting == "auto";
  }
  /// How the model to train loads (float32_weights).
  models::WeightStorage weight_storage() const {
    return float32_weights ? models::WeightStorage::float32 : models::WeightStorage::source;
  }
  int64_t log_every = 10;            ///< progress line interval (steps)
  int64_t save_every = 50;           ///< snapshot interval for --resume (steps; 0 = never)
  double save_every_minutes = 5;     ///< also snapshot when this much wall time passed (0 = never)
  uint64_t seed = 42;
  std::filesystem::path out_dir;     ///< gates folder (gates.json, train_log.jsonl, snapshot)
  bool resume = false;               ///< continue from out_dir's snapshot
  /// Stop (with a snapshot) after this many steps in this invocation; 0 = run to the end.
  /// `--resume` continues; the result equals an uninterrupted run.
  int64_t stop_after = 0;
  /// With frozen weights the teacher's outputs never change: keep up to this many MiB of them
  /// so later epochs skip the teacher's forward pass (0 = no cache).
  int64_t teacher_cache_mib = 2048;
  /// Language models: distil the teacher's top-k next-token distribution (k tokens and a bucket
  /// for the rest; pruner/objectives/top_k_target.h), which is what the teacher cache then keeps;
  /// 0 = the whole distribution (exact).
  int64_t teacher_top_k = 0;
  /// Language models: tokens whose logits the KL computes at a time (pruner/objectives/chunked_kl.h);
  /// 0 = automatic (whole batches while their logits take <= 1 GiB, else ~64 MiB chunks);
  /// -1 = always whole batches through the model's own logits.
  int64_t kl_chunk_tokens = 0;
  /// The training text as given (files made absolute, --max-lines, --holdout, --paragraphs):
  /// recorded so that --resume refuses a different corpus. Null when not set (API callers).
  nlohmann::json corpus;
  std::string model_path;            ///< recorded in the gate state
  torch::Device device = torch::kCPU;

  /// The settings recorded in gates.json (every row of training_option_table() with a
  /// json_key, plus the gate constants gamma and zeta and the seed).
  nlohmann::json to_json() const;
  /// Why a run recorded with `recorded` (gates.json "settings") cannot be resumed with these
  /// settings: "setting 'K' was A when the run started, now B", or "" when it can.
  std::string resume_difference(const nlohmann::json& recorded) const;
};

/// What the training options set: the run's settings, the corpus settings and the text.
struct TrainingSettings {
  GateTrainingOptions training;
  CorpusOptions corpus;
  TrainingText text;
};

/// One row of the option table.
struct TrainingOption {
  std::string flag;          ///< without "--"; empty for a recorded setting with no flag of its own
  std::string help;
  std::string json_key;      ///< key in gates.json "settings"; empty = not recorded
  bool resume_must_match = false;  ///< --resume refuses a different value (recorded rows)
  /// Boost value semantic (type and default); null for a switch.
  std::function<boost::program_options::value_semantic*()> value;
  /// Stores the parsed value. @throws headprune::UsageError naming the flag for a bad value.
  std::function<void(const boost::program_options::variable_value&, TrainingSettings&)> apply;
  /// The value as gates.json records it.
  std::function<nlohmann::json(const GateTrainingOptions&)> record;
  /// The --help group it is listed under ("Training", "Advanced training", ...).
  std::string group;
};

/// The table, in --help order (training_options.cpp).
const std::vector<TrainingOption>& training_option_table();

/// Declares every flag of the table, each on the options of its group (`group_of(caption)`),
/// except the flags in `exclude` (without "--").
void add_training_options(
    const std::function<boost::program_options::options_description&(const std::string&)>& group_of,
    const std::vector<std::string>& exclude = {});

/// Checks a sparsity target given with `flag` (--target-sparsity, sweep's --targets).
/// @throws headprune::UsageError "FLAG T is outside [0, 1)".
void check_target_sparsity(double target, const std::string& flag);

/// Parses a budget flag's value: a count ("21000000", "21e6") or a percentage of the dense
/// model ("92.5%", in (0, 100)); `flag` (--target-params, --target-flops) names it in errors.
/// @returns {value, is_percent}. @throws headprune::UsageError for anything else.
std::pair<double, bool> parse_budget(const std::string& text, const std::string& flag);

/// Settings from parsed flags: each row's value, then the rules between flags (exactly one of
/// --target-sparsity / --l0-lambda; --allow-empty-layers; --finetune-steps with --train-weights).
/// @throws headprune::UsageError on a bad value or combination.
TrainingSettings training_settings(const boost::program_options::variables_map& vm, uint64_t seed,
                                   const torch::Device& device);

/// The training text that gates.json "settings" record (corpus, seed, flops_seq_len): its files
/// (or labelled file) and how they were read, so that the same training share can be rebuilt
/// (apply --refit). @throws headprune::Error if the settings do not record a corpus (gates
/// trained through the API).
std::pair<TrainingText, CorpusOptions> recorded_corpus(const nlohmann::json& settings);

}  // namespace headprune::pruner
