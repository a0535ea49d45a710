#include "pruner/training/training_options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <type_traits>

#include <fmt/format.h>

#include "models/attention_kernel.h"
#include "models/errors.h"
#include "pruner/log.h"

namespace headprune::pruner {
namespace po = boost::program_options;
namespace {

template <typename T>
po::value_semantic* with_default(const T& v) {
  return po::value<T>()->value_name(std::is_integral_v<T> ? "N" : "NAME")->default_value(v);
}
po::value_semantic* with_default(double v) {
  return po::value<double>()->value_name("X")->default_value(v, fmt::format("{:.6g}", v));  // 0.1, not 0.100000
}

/// A check on a flag's value; throws UsageError(message) when `ok` is false.
template <typename T>
using CheckFn = bool (*)(const T&);
/// The same type, in a context that does not take part in deducing T (so `nullptr` is accepted).
template <typename T>
using Check = typename std::enable_if<true, CheckFn<T>>::type;

/// An enum's name, for the record (gates::to_string is overloaded per enum).
constexpr auto enum_name = [](auto value) { return std::string(gates::to_string(value)); };

template <typename T>
bool positive(const T& v) { return v > 0; }
template <typename T>
bool non_negative(const T& v) { return v >= 0; }
bool positive_finite(const double& v) { return v > 0 && std::isfinite(v); }
bool non_negative_finite(const double& v) { return v >= 0 && std::isfinite(v); }
bool at_least_minus_one(const int64_t& v) { return v >= -1; }

/// Stores a flag's value through `store(settings, value)` after `ok` accepts it.
/// @throws UsageError "--FLAG must be REQUIREMENT" when it does not.
template <typename T, typename Store>
std::function<void(const po::variable_value&, TrainingSettings&)> checked_apply(
    const char* flag, Check<T> ok, const char* requirement, Store store) {
  return [flag, ok, requirement, store](const po::variable_value& v, TrainingSettings& s) {
    const T& value = v.as<T>();
    if (ok && !ok(value)) throw UsageError(fmt::format("--{} must be {}", flag, requirement));
    store(s, value);
  };
}

/// A row whose value is a field of GateTrainingOptions: `field` maps the options (const or
/// not) to the field. Recorded under `json_key` (if any) and then must match on --resume.
template <typename T, typename Field>
TrainingOption run_option(const char* flag, T fallback, const char* json_key, Field field,
                          Check<T> ok, const char* requirement, const char* help) {
  TrainingOption row{flag, help, json_key, *json_key != '\0', {}, {}, {}, ""};
  row.value = [fallback] { return with_default(fallback); };
  row.apply = checked_apply<T>(flag, ok, requirement,
                               [field](TrainingSettings& s, const T& v) { field(s.training) = v; });
  if (row.resume_must_match)
    row.record = [field](const GateTrainingOptions& o) { return nlohmann::json(field(o)); };
  return row;
}

/// A row holding one of a set of names, parsed into an enum field and recorded by name.
template <typename Field, typename Parse>
TrainingOption choice_option(const char* flag, const char* fallback, const char* json_key, Field field,
                             Parse parse, const char* help) {
  TrainingOption row{flag, help, json_key, true, {}, {}, {}, ""};
  row.value = [fallback] { return with_default(std::string(fallback)); };
  row.apply = [field, parse](const po::variable_value& v, TrainingSettings& s) {
    try {
      field(s.training) = parse(v.as<std::string>());
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  };
  row.record = [field](const GateTrainingOptions& o) { return nlohmann::json(enum_name(field(o))); };
  return row;
}

/// A row of the corpus settings (recorded together, as "corpus", by training_settings).
template <typename T, typename Field>
TrainingOption corpus_option(const char* flag, T fallback, Field field, Check<T> ok,
                             const char* requirement, const char* help) {
  TrainingOption row{flag, help, "", false, {}, {}, {}, ""};
  row.value = [fallback] { return with_default(fallback); };
  row.apply = checked_apply<T>(flag, ok, requirement,
                               [field](TrainingSettings& s, const T& v) { field(s.corpus) = v; });
  return row;
}

/// A recorded setting with no flag of its own (fixed constants, the global --seed, the corpus).
template <typename Field>
TrainingOption recorded_only(const char* json_key, Field field) {
  TrainingOption row{"", "", json_key, true, {}, {}, {}, ""};
  row.record = [field](const GateTrainingOptions& o) { return nlohmann::json(field(o)); };
  return row;
}

/// A switch (no value): its effect is in apply_rules or the field it sets.
TrainingOption switch_option(const char* flag, const char* help) {
  TrainingOption row{flag, help, "", false, {}, {}, {}, ""};
  row.apply = [](const po::variable_value&, TrainingSettings&) {};
  return row;
}

/// A switch recorded in gates.json under `key` that --resume requires to match; it sets the
/// bool `field` returns (`[](auto& o) -> auto& { return o.x; }`).
template <typename Field>
TrainingOption recorded_switch(const char* flag, const char* help, const char* key, Field field) {
  TrainingOption row = switch_option(flag, help);
  row.json_key = key;
  row.resume_must_match = true;
  row.apply = [field](const po::variable_value&, TrainingSettings& s) { field(s.training) = true; };
  row.record = [field](const GateTrainingOptions& o) { return nlohmann::json(field(o)); };
  return row;
}

/// Rows whose value needs more than one field or a custom record.
std::vector<TrainingOption> objective_rows() {
  TrainingOption target{"target-sparsity", "fraction to remove, in [0,1): trained by a Lagrangian "
                        "and met exactly by the final mask", "target_sparsity", true, {}, {}, {}, ""};
  target.value = [] { return po::value<double>()->value_name("S"); };
  target.apply = [](const po::variable_value& v, TrainingSettings& s) {
    const double t = v.as<double>();
    check_target_sparsity(t, "--target-sparsity");
    s.training.target_sparsity = t;
  };
  target.record = [](const GateTrainingOptions& o) {
    return o.target_sparsity ? nlohmann::json(*o.target_sparsity) : nlohmann::json();
  };
  TrainingOption lambda{"l0-lambda", "instead of a target: fixed L0 penalty lambda * sum P(gate != 0) "
                        "(Voita et al. 2019)", "l0_lambda", true, {}, {}, {}, ""};
  lambda.value = [] { return po::value<double>()->value_name("X"); };
  lambda.apply = [](const po::variable_value& v, TrainingSettings& s) {
    if (!(v.as<double>() >= 0)) throw UsageError("--l0-lambda must be >= 0");
    s.training.l0_lambda = v.as<double>();
  };
  lambda.record = [](const GateTrainingOptions& o) { return nlohmann::json(o.l0_lambda); };
  TrainingOption params{"target-params", "instead of a fraction: a budget in parameters of the whole "
                        "model, N or X% of the dense model's; the final mask stays within it",
                        "target_params", true, {}, {}, {}, ""};
  params.value = [] { return po::value<std::string>()->value_name("N|X%"); };
  params.apply = [](const po::variable_value& v, TrainingSettings& s) {
    parse_budget(v.as<std::string>(), "--target-params");
    s.training.target_params = v.as<std::string>();
  };
  params.record = [](const GateTrainingOptions& o) {
    return o.target_params ? nlohmann::json(*o.target_params) : nlohmann::json();
  };
  TrainingOption flops{"target-flops", "instead of a fraction of heads: the share X% of the dense model's "
                       "forward FLOPs per token (at --max-length) the pruned model may keep; the final mask "
                       "stays within it", "target_flops", true, {}, {}, {}, ""};
  flops.value = [] { return po::value<std::string>()->value_name("X%"); };
  flops.apply = [](const po::variable_value& v, TrainingSettings& s) {
    const auto [value, percent] = parse_budget(v.as<std::string>(), "--target-flops");
    if (!percent) throw UsageError(fmt::format("--target-flops {}: give a percentage, e.g. 60%", v.as<std::string>()));
    s.training.target_flops = value / 100;
  };
  flops.record = [](const GateTrainingOptions& o) {
    return o.target_flops ? nlohmann::json(*o.target_flops) : nlohmann::json();
  };
  TrainingOption kv{"target-kv-bytes", "instead of a fraction of heads, for a decoder: a budget in KV-cache bytes "
                    "per token at F16 (2 bytes a number), N or X% of the dense model's; trained by closing whole KV "
                    "groups (--gqa-mode groups); the final mask's cache stays within it", "target_kv_bytes", true,
                    {}, {}, {}, ""};
  kv.value = [] { return po::value<std::string>()->value_name("N|X%"); };
  kv.apply = [](const po::variable_value& v, TrainingSettings& s) {
    parse_budget(v.as<std::string>(), "--target-kv-bytes");
    s.training.target_kv_bytes = v.as<std::string>();
  };
  kv.record = [](const GateTrainingOptions& o) {
    return o.target_kv_bytes ? nlohmann::json(*o.target_kv_bytes) : nlohmann::json();
  };
  return {target, lambda, params, flops, kv,
          choice_option("sparsity-unit", "heads", "sparsity_unit",
                        [](auto& o) -> auto& { return o.unit; }, &gates::parse_unit,
                        "what the target counts: heads, attention-params, flops, or kv-cache (a decoder's KV cache "
                        "per token: whole KV groups, with --gqa-mode groups)")};
}

/// --target-latency and the shape and table that price it.
std::vector<TrainingOption> latency_rows() {
  TrainingOption latency{"target-latency", "instead of a fraction of heads: a budget per forward pass at "
                         "--latency-shape on this machine, MS milliseconds or X% of the dense model's, priced by "
                         "a latency table measured once and cached (--latency-table; with --prune heads,ffn it times "
                         "FFN widths too); the final mask's predicted latency stays within it", "target_latency", true, {}, {}, {}, ""};
  latency.value = [] { return po::value<std::string>()->value_name("MS|X%"); };
  latency.apply = [](const po::variable_value& v, TrainingSettings& s) {
    const auto& text = v.as<std::string>();
    try {
      parse_budget(text, "--target-latency");
    } catch (const UsageError&) {
      throw UsageError(fmt::format("--target-latency {}: give milliseconds (e.g. 25) or a percentage of the dense "
                                   "model's latency in (0, 100) (e.g. 80%)",
                                   text));
    }
    s.training.target_latency = text;
  };
  latency.record = [](const GateTrainingOptions& o) {
    return o.target_latency ? nlohmann::json(*o.target_latency) : nlohmann::json();
  };
  TrainingOption shape{"latency-shape", "batch x sequence length the latency budget is timed at",
                       "latency_shape", true, {}, {}, {}, ""};
  shape.value = [] { return po::value<std::string>()->default_value("1x128")->value_name("BxS"); };
  shape.apply = [](const po::variable_value& v, TrainingSettings& s) {
    const auto& text = v.as<std::string>();
    const auto x = text.find('x');
    try {
      std::size_t used_b = 0, used_s = 0;
      s.training.latency_batch_size = std::stoll(text.substr(0, x), &used_b);
      s.training.latency_seq_len = std::stoll(text.substr(x + 1), &used_s);
      if (x == std::string::npos || used_b != x || used_s != text.size() - x - 1 || s.training.latency_batch_size < 1 ||
          s.training.latency_seq_len < 1)
        throw std::invalid_argument(text);
    } catch (const std::logic_error&) {
      throw UsageError(fmt::format("--latency-shape {}: give batch x sequence length, e.g. 1x128", text));
    }
  };
  shape.record = [](const GateTrainingOptions& o) {
    return nlohmann::json(fmt::format("{}x{}", o.latency_batch_size, o.latency_seq_len));
  };
  TrainingOption table{"latency-table", "the latency table's file: read if it exists (it must come from this "
                       "machine), else measured and written there (default: one per model, shape and machine "
                       "under ~/.cache/headprune/latency/)", "", false, {}, {}, {}, ""};
  table.value = [] { return po::value<std::string>()->value_name("FILE"); };
  table.apply = [](const po::variable_value& v, TrainingSettings& s) { s.training.latency_table_file = v.as<std::string>(); };
  return {latency, shape, table};
}

/// --data or --labels: the training text.
std::vector<TrainingOption> data_rows() {
  TrainingOption data{"data", "training text file(s): UTF-8, one document or sentence per line (or "
                      "see --paragraphs)", "", false, {}, {}, {}, ""};
  data.value = [] { return po::value<std::vector<std::string>>()->value_name("FILE...")->multitoken(); };
  data.apply = [](const po::variable_value& v, TrainingSettings& s) {
    const auto& files = v.as<std::vector<std::string>>();
    s.text.data.assign(files.begin(), files.end());
  };
  TrainingOption labels{"labels", "instead of --data, for a checkpoint with a classifier head: labelled "
                        "sentences (sentence<TAB>label, as eval --classification reads them); the gates "
                        "train on the labels' cross-entropy mixed with the distillation (--label-weight)",
                        "", false, {}, {}, {}, ""};
  labels.value = [] { return po::value<std::string>()->value_name("FILE"); };
  labels.apply = [](const po::variable_value& v, TrainingSettings& s) { s.text.labels = v.as<std::string>(); };
  return {data, labels};
}

/// The corpus flags; --max-length also sets the length FLOPs are counted at.
std::vector<TrainingOption> corpus_rows() {
  TrainingOption max_length{"max-length", "tokens per sequence (longer lines are truncated)",
                            "flops_seq_len", true, {}, {}, {}, ""};
  max_length.value = [] { return with_default(std::size_t{128}); };
  max_length.apply = [](const po::variable_value& v, TrainingSettings& s) {
    if (v.as<std::size_t>() < 3) throw UsageError("--max-length must be >= 3");
    s.corpus.max_length = v.as<std::size_t>();
    s.training.flops_seq_len = static_cast<int64_t>(s.corpus.max_length);
  };
  max_length.record = [](const GateTrainingOptions& o) { return nlohmann::json(o.flops_seq_len); };
  TrainingOption paragraphs{"paragraphs", "a document is a paragraph (lines up to a blank line or a "
                            "'%' line, as in fortune files), not a single line", "", false, {}, {}, {}, ""};
  paragraphs.value = [] { return po::bool_switch(); };
  paragraphs.apply = [](const po::variable_value& v, TrainingSettings& s) {
    s.corpus.paragraphs = v.as<bool>();
  };
  return {max_length,
          corpus_option("max-lines", std::size_t{0}, [](auto& c) -> auto& { return c.max_lines; },
                        nullptr, "", "use at most this many corpus documents (0 = all)"),
          paragraphs,
          corpus_option("holdout", 0.1, [](auto& c) -> auto& { return c.holdout_fraction; },
                        +[](const double& v) { return v > 0 && v < 1; }, "in (0, 1)",
                        "share of lines held out for measuring fidelity")};
}

/// Steps and batches.
std::vector<TrainingOption> step_rows() {
  return {
      run_option("steps", int64_t{300}, "steps", [](auto& o) -> auto& { return o.steps; },
                 &positive<int64_t>, ">= 1", "training steps"),
      run_option("batch-size", std::size_t{32}, "batch_size", [](auto& o) -> auto& { return o.batch_size; },
                 &positive<std::size_t>, ">= 1", "sequences per step")};
}

/// The optimisers' rates and the target's warm-up.
std::vector<TrainingOption> rate_rows() {
  return {
      run_option("lr", 0.1, "learning_rate", [](auto& o) -> auto& { return o.learning_rate; },
                 &positive<double>, "> 0", "learning rate of log_alpha (AdamW)"),
      run_option("lambda-lr", 0.1, "lambda_learning_rate",
                 [](auto& o) -> auto& { return o.lambda_learning_rate; }, &positive<double>, "> 0",
                 "step size of the Lagrange multipliers (plain gradient ascent)"),
      run_option("lambda-damping", 20.0, "lambda_damping", [](auto& o) -> auto& { return o.lambda_damping; },
                 &non_negative_finite, "finite and >= 0",
                 "damping of the Lagrangian (Platt & Barr 1988): the sparsity pressure built up while the "
                 "gates lag behind the target vanishes once they overshoot it by 1/(2X) (0 = CoFi's plain "
                 "Lagrangian)"),
      run_option("warmup-steps", int64_t{-1}, "warmup_steps", [](auto& o) -> auto& { return o.warmup_steps; },
                 nullptr, "", "steps over which the target ramps up from 0 (-1 = 40% of --steps)"),
      run_option("max-extra-steps", int64_t{-1}, "max_extra_steps",
                 [](auto& o) -> auto& { return o.max_extra_steps; }, +[](const int64_t& v) { return v >= -1; },
                 ">= -1",
                 "when the gates have not converged after --steps (expected sparsity over 0.05 below the "
                 "mask's, or kept and removed heads barely apart), train them on in blocks of a tenth of "
                 "--steps until they have, at most this many steps more (-1 = as many as --steps, 0 = never; "
                 "said in the log; not when the Lagrangian overshot the target)")};
}

/// --uniform-layers: recorded, and must match on --resume (it changes which mask is final).
TrainingOption uniform_layers_row() {
  return recorded_switch(
      "uniform-layers", "keep the same number of heads in every layer (with GQA also the same per "
      "KV group), so a LLaMA export is a plain config every transformers version and converter "
      "loads; targets are met in steps of one head (one per KV group) per layer",
      "uniform_layers", [](auto& o) -> auto& { return o.constraints.uniform_layers; });
}

/// --ffn-block: recorded (and must match on --resume) only when FFN neurons are gated.
TrainingOption ffn_block_row() {
  auto row = run_option("ffn-block", int64_t{32}, "ffn_block", [](auto& o) -> auto& { return o.ffn_block; },
                        &positive<int64_t>, ">= 1",
                        "with --prune heads,ffn: FFN neurons per gate, removed together (must divide every layer's "
                        "FFN width; 1 = single neurons)");
  row.resume_must_match = true;
  row.record = [](const GateTrainingOptions& o) { return o.gates_ffn() ? nlohmann::json(o.ffn_block) : nlohmann::json(); };
  return row;
}

/// The gates and the rules of the final mask.
std::vector<TrainingOption> gate_rows() {
  return {
      run_option("beta", 2.0 / 3.0, "beta", [](auto& o) -> auto& { return o.gate.beta; },
                 &positive<double>, "> 0", "hard-concrete temperature (Louizos 2/3; Voita et al. 0.33)"),
      run_option("log-alpha-init", 3.0, "log_alpha_init", [](auto& o) -> auto& { return o.gate.log_alpha_init; },
                 nullptr, "", "initial log_alpha of every gate (3 = almost fully open)"),
      choice_option("gate-rule", "louizos", "rule", [](auto& o) -> auto& { return o.rule; },
                    &gates::parse_rule,
                    "deterministic gate: louizos (clip(sigmoid(log_alpha)(zeta-gamma)+gamma)) or cofi"),
      run_option("min-heads-per-layer", int64_t{1}, "min_heads_per_layer",
                 [](auto& o) -> auto& { return o.constraints.min_heads_per_layer; }, &non_negative<int64_t>,
                 ">= 0", "every layer keeps at least this many heads"),
      choice_option("gqa-mode", "uniform", "gqa_mode", [](auto& o) -> auto& { return o.constraints.group_rule; },
                    &gates::parse_group_rule,
                    "grouped-query attention (LLaMA with num_key_value_heads < num_attention_heads): "
                    "'uniform' removes query heads one per KV group at a time so every group of a layer "
                    "keeps the same number (HF-compatible), 'groups' removes whole KV groups, 'none' "
                    "ignores groups (headprune-only checkpoints); no effect on models without GQA"),
      uniform_layers_row(),
      choice_option("prune", "heads", "prune", [](auto& o) -> auto& { return o.kinds; }, &gates::parse_gate_kinds,
                    "what the gates cover: heads, or heads,ffn to gate each layer's FFN neurons too, in blocks of "
                    "--ffn-block, under one --target-flops or --target-params budget (CoFi; heads alone cap the speedup), "
                    "or heads,ffn,layers to add one gate over each layer's whole attention and one over its whole "
                    "FFN (CoFi's sublayer gates; layers may then lose all their heads or FFN neurons)"),
      ffn_block_row(),
      run_option("head-multiple", int64_t{1}, "head_multiple",
                 [](auto& o) -> auto& { return o.constraints.head_multiple; }, &positive<int64_t>, ">= 1",
                 "every layer keeps a multiple of K heads (or all of them), e.g. so that kept heads x "
                 "head_dim is a multiple of 64 for quantised kernels; the target must be reachable in such steps"),
      switch_option("allow-empty-layers", "let layers lose all their heads (sets --min-heads-per-layer "
                    "0; older transformers versions cannot load such a checkpoint)"),
      recorded_only("gamma", [](auto& o) -> auto& { return o.gate.gamma; }),
      recorded_only("zeta", [](auto& o) -> auto& { return o.gate.zeta; })};
}

/// The objective, the weight phase and bookkeeping.
std::vector<TrainingOption> phase_rows() {
  TrainingOption train_weights = recorded_switch(
      "train-weights", "after the gates are trained and the mask fixed, fine-tune the model's weights "
      "by the same distillation (default: only the gates train; the kept weights stay the source's)",
      "train_weights", [](auto& o) -> auto& { return o.train_weights; });
  TrainingOption float32_weights = switch_option(
      "float32-weights", "hold every weight in float32 (default: a bfloat16/float16 checkpoint's projections "
      "and embeddings stay in the file's dtype and are widened per use: the same results with half the "
      "weight memory, at the cost of widening each matrix per forward and backward)");
  float32_weights.apply = [](const po::variable_value&, TrainingSettings& s) { s.training.float32_weights = true; };
  TrainingOption pruned_layers = recorded_switch(
      "finetune-pruned-layers", "with --train-weights, fine-tune only the layers that lost a head or an FFN "
      "block (their attention, FFN and norms); the embeddings, the untouched layers and the head stay the "
      "source's (default: every weight)",
      "finetune_pruned_layers", [](auto& o) -> auto& { return o.finetune_pruned_layers; });
  pruned_layers.record = [](const GateTrainingOptions& o) {
    return o.train_weights ? nlohmann::json(o.finetune_pruned_layers) : nlohmann::json();
  };
  auto finetune = run_option("finetune-steps", int64_t{200}, "finetune_steps",
                             [](auto& o) -> auto& { return o.finetune_steps; }, nullptr, "",
                             "steps of weight fine-tuning with --train-weights");
  finetune.record = [](const GateTrainingOptions& o) {
    return o.train_weights ? nlohmann::json(o.finetune_steps) : nlohmann::json();
  };
  auto label_weight = run_option(
      "label-weight", kDefaultLabelWeight, "label_weight", [](auto& o) -> auto& { return o.label_weight; },
      +[](const double& w) { return w > 0 && w <= 1; }, "in (0, 1]",
      "with --labels: weight w of the labels' cross-entropy; the loss is w * CE + (1 - w) * distillation "
      "(0.1/0.9 as CoFi's prediction/layer mix; 1 = labels alone)");
  label_weight.record = [](const GateTrainingOptions& o) {
    return o.corpus.is_object() && o.corpus.contains("labels") ? nlohmann::json(o.label_weight) : nlohmann::json();
  };
  return {
      run_option("embedding-weight", 1.0, "embedding_weight", [](auto& o) -> auto& { return o.embedding_weight; },
                 nullptr, "", "weight of the sentence-embedding term of the distillation loss"),
      run_option("distill-layers", 0.0, "distill_layers", [](auto& o) -> auto& { return o.distill_layers; },
                 &non_negative<double>, ">= 0",
                 "weight of layer-wise distillation (CoFi): every layer's output but the last matched to the "
                 "dense model's (relative squared error, mean over layers), added to the objective; 0 = off"),
      label_weight, train_weights, float32_weights, finetune, pruned_layers,
      run_option("weights-lr", 1e-4, "weights_learning_rate",
                 [](auto& o) -> auto& { return o.weights_learning_rate; }, &positive_finite, "> 0",
                 "AdamW learning rate of the weights with --train-weights"),
      run_option("teacher-cache-mib", int64_t{2048}, "", [](auto& o) -> auto& { return o.teacher_cache_mib; },
                 &non_negative<int64_t>, ">= 0",
                 "memory for caching the frozen teacher's outputs between epochs (0 = off)"),
      run_option("teacher-top-k", int64_t{0}, "teacher_top_k", [](auto& o) -> auto& { return o.teacher_top_k; },
                 &non_negative<int64_t>, ">= 0",
                 "language models: distil the teacher's N most probable next tokens and one bucket for the "
                 "rest (cached at 8N+4 bytes a token) instead of its whole distribution, a lower bound "
                 "of the KL; 0 = whole (exact)"),
      run_option("kl-chunk-tokens", int64_t{0}, "", [](auto& o) -> auto& { return o.kl_chunk_tokens; },
                 &at_least_minus_one, ">= -1",
                 "language models: tokens whose logits exist at a time in the KL (0 = automatic: whole "
                 "batches up to 1 GiB of logits, else ~64 MiB chunks; -1 = whole batches)"),
      run_option("checkpoint-layers", std::string("auto"), "", [](auto& o) -> auto& { return o.checkpoint_layers; },
                 &GateTrainingOptions::is_checkpoint_setting, "on, off or auto",
                 "language models: keep only each decoder layer's input for backward and run the layer again "
                 "there (activation checkpointing: less memory, about one more forward pass of time); auto = on "
                 "from 1B parameters where LibTorch has no fused attention kernel (Debian's)"),
      run_option("log-every", int64_t{10}, "", [](auto& o) -> auto& { return o.log_every; },
                 &positive<int64_t>, ">= 1", "progress line every N steps"),
      run_option("save-every", int64_t{50}, "", [](auto& o) -> auto& { return o.save_every; }, nullptr, "",
                 "snapshot for --resume every N steps (0 = never)"),
      run_option("save-every-minutes", 5.0, "", [](auto& o) -> auto& { return o.save_every_minutes; },
                 &non_negative<double>, ">= 0",
                 "also snapshot when this many minutes passed since the last one (0 = never); a "
                 "killed run loses at most that much"),
      recorded_only("seed", [](auto& o) -> auto& { return o.seed; }),
      recorded_only("corpus", [](auto& o) -> auto& { return o.corpus; })};
}

/// What --prune heads,ffn needs: a FLOPs or parameter budget, which weighs heads and
/// FFN blocks by what they cost, and none of the per-layer head-count rules, which FFN blocks do not follow.
void check_ffn_rules(const po::variables_map& vm, const GateTrainingOptions& o) {
  if (!o.gates_ffn()) {
    if (!vm["ffn-block"].defaulted()) throw UsageError("--ffn-block sizes FFN gates: add --prune heads,ffn");
    return;
  }
  if (!vm.count("target-flops") && !vm.count("target-params") && !vm.count("target-latency"))
    throw UsageError("--prune heads,ffn needs --target-flops X%, --target-params N|X% or --target-latency MS|X%: heads "
                     "and FFN blocks are weighed by the FLOPs, parameters or time they cost (--target-sparsity "
                     "counts heads only; --l0-lambda does not price FFN blocks)");
  if (o.constraints.uniform_layers || o.constraints.head_multiple > 1)
    throw UsageError(fmt::format("--prune heads,ffn cannot be combined with {}: it sets head counts per layer, "
                                 "which FFN blocks do not follow",
                                 o.constraints.uniform_layers ? "--uniform-layers" : "--head-multiple"));
}

/// Refuses a group rule other than whole KV groups for `flag`, which counts the KV cache: only
/// whole groups shrink it. `remedy` says what to do instead.
void require_whole_groups(const GateTrainingOptions& o, const char* flag, const char* remedy) {
  if (o.constraints.group_rule == gates::GroupRule::kWholeGroups) return;
  throw UsageError(fmt::format("{}: only whole KV groups shrink the KV cache, and --gqa-mode {} removes query heads "
                               "within them; {}",
                               flag, gates::to_string(o.constraints.group_rule), remedy));
}

/// What --target-kv-bytes needs: whole KV groups. The group rule is set to groups unless another
/// was asked for, which is refused.
void check_kv_budget_rules(const po::variables_map& vm, GateTrainingOptions& o) {
  if (!o.target_kv_bytes) return;
  if (vm.count("gqa-mode") && !vm["gqa-mode"].defaulted())
    require_whole_groups(o, "--target-kv-bytes", "drop it or give --gqa-mode groups");
  o.constraints.group_rule = gates::GroupRule::kWholeGroups;
}

/// The rules between flags, after every row has been applied.
void apply_rules(const po::variables_map& vm, TrainingSettings& s) {
  const auto budgets = vm.count("target-params") + vm.count("target-flops") + vm.count("target-latency") +
                       vm.count("target-kv-bytes");
  if (vm.count("target-sparsity") + vm.count("l0-lambda") + budgets != 1)
    throw UsageError("give exactly one of --target-sparsity S, --target-params N|X%, --target-flops X%, "
                     "--target-latency MS, --target-kv-bytes N|X% or --l0-lambda X");
  if (budgets > 0 && !vm["sparsity-unit"].defaulted())
    throw UsageError("a budget (--target-params, --target-flops, --target-latency, --target-kv-bytes) sets its own "
                     "unit; drop --sparsity-unit");
  check_ffn_rules(vm, s.training);
  check_kv_budget_rules(vm, s.training);
  if (s.training.unit == gates::SparsityUnit::kKvCache)
    require_whole_groups(s.training, "--sparsity-unit kv-cache", "add --gqa-mode groups");
  if (!vm.count("target-latency") &&
      ((vm.count("latency-shape") && !vm["latency-shape"].defaulted()) || vm.count("latency-table")))
    throw UsageError("--latency-shape and --latency-table have no effect without --target-latency");
  if (vm.count("data") + vm.count("labels") != 1)
    throw UsageError("give the training text with --data FILE... (plain text) or --labels FILE (labelled "
                     "sentences), one of the two");
  if (vm.count("labels") && s.corpus.paragraphs)
    throw UsageError("--paragraphs does not apply to --labels (one labelled sentence per line)");
  if (!vm.count("labels") && !vm["label-weight"].defaulted())
    throw UsageError("--label-weight has no effect without --labels");
  auto& o = s.training;
  if (o.train_weights && o.finetune_steps < 1)
    throw UsageError("--finetune-steps must be >= 1 with --train-weights");
  if (!o.train_weights && !vm["finetune-steps"].defaulted())
    log::warn("--finetune-steps has no effect without --train-weights");
  if (!o.train_weights && o.finetune_pruned_layers)
    throw UsageError("--finetune-pruned-layers chooses the weights --train-weights fine-tunes: add --train-weights");
  // --allow-empty-layers means a minimum of 0, unless --min-heads-per-layer is given too; so do
  // sublayer gates, whose point is to close a layer's attention or FFN whole.
  if ((vm.count("allow-empty-layers") || o.gates_sublayers()) && vm["min-heads-per-layer"].defaulted())
    o.constraints.min_heads_per_layer = 0;
  if (o.gates_sublayers() && o.constraints.min_heads_per_layer > 0)
    throw UsageError(fmt::format("--prune heads,ffn,layers closes whole sublayers; --min-heads-per-layer {} forbids "
                                 "that: leave it out (or prune heads,ffn)",
                                 o.constraints.min_heads_per_layer));
}

}  // namespace

const std::vector<TrainingOption>& training_option_table() {
  static const std::vector<TrainingOption> table = [] {
    std::vector<TrainingOption> rows;
    const std::pair<std::vector<TrainingOption>, const char*> parts[] = {
        {data_rows(), "Required"},         {objective_rows(), "Target"},      {latency_rows(), "Target"},
        {step_rows(), "Training"},         {rate_rows(), "Training"},
        {corpus_rows(), "Training text"},  {gate_rows(), "Advanced training"},
        {phase_rows(), "Advanced training"}};
    for (const auto& [part, group] : parts)
      for (auto row : part) {
        row.group = group;
        rows.push_back(row);
      }
    return rows;
  }();
  return table;
}

void add_training_options(const std::function<po::options_description&(const std::string&)>& group_of,
                          const std::vector<std::string>& exclude) {
  for (const auto& row : training_option_table()) {
    if (row.flag.empty() || std::find(exclude.begin(), exclude.end(), row.flag) != exclude.end()) continue;
    auto& desc = group_of(row.group);
    if (row.value)
      desc.add_options()(row.flag.c_str(), row.value(), row.help.c_str());
    else
      desc.add_options()(row.flag.c_str(), row.help.c_str());
  }
}

void check_target_sparsity(double target, const std::string& flag) {
  if (!(target >= 0 && target < 1)) throw UsageError(fmt::format("{} {} is outside [0, 1)", flag, target));
}

std::pair<double, bool> parse_budget(const std::string& text, const std::string& flag) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  const bool whole = !number.empty() && end != nullptr && *end == '\0';
  if (!whole || !std::isfinite(value) || value <= 0 || (percent && value >= 100))
    throw UsageError(fmt::format("{} {}: expected a count (e.g. 21000000 or 21e6) or a percentage of the "
                                 "dense model in (0, 100) (e.g. 90%)",
                                 flag, text));
  return {value, percent};
}

TrainingSettings training_settings(const po::variables_map& vm, uint64_t seed, const torch::Device& device) {
  TrainingSettings s;
  for (const auto& row : training_option_table())
    if (!row.flag.empty() && vm.count(row.flag)) row.apply(vm[row.flag], s);
  apply_rules(vm, s);
  const auto absolute = [](const std::filesystem::path& f) {
    return std::filesystem::weakly_canonical(std::filesystem::absolute(f)).string();
  };
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : s.text.data) files.push_back(absolute(file));
  s.training.corpus = {{"max_lines", s.corpus.max_lines},
                       {"holdout", s.corpus.holdout_fraction},
                       {"paragraphs", s.corpus.paragraphs}};
  if (s.text.labelled())
    s.training.corpus["labels"] = absolute(s.text.labels);
  else
    s.training.corpus["data"] = files;
  s.training.seed = seed;
  s.training.device = device;
  s.corpus.seed = seed;
  return s;
}

nlohmann::json GateTrainingOptions::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& row : training_option_table())
    if (row.record) j[row.json_key] = row.record(*this);
  return j;
}

std::string GateTrainingOptions::resume_difference(const nlohmann::json& recorded) const {
  const auto now = to_json();
  for (const auto& [key, value] : recorded.items())
    if (!now.contains(key) || now.at(key) != value)
      return fmt::format("setting '{}' was {} when the run started, now {}", key, value.dump(),
                         now.contains(key) ? now.at(key).dump() : "unset");
  return "";
}

namespace {

/// A non-negative integer the gates folder's settings recorded (a float or string there is an error).
/// @throws headprune::Error naming `what`.
uint64_t recorded_count(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw Error(fmt::format("the gates folder's settings {} must be a non-negative integer, not {}", what, v.dump()));
  return static_cast<uint64_t>(v.get<int64_t>());
}

}  // namespace

std::pair<TrainingText, CorpusOptions> recorded_corpus(const nlohmann::json& settings) {
  const auto corpus = settings.value("corpus", nlohmann::json());
  if (!corpus.is_object() || !(corpus.contains("data") || corpus.contains("labels")))
    throw Error("the gates folder does not record its training text (settings.corpus), so it cannot be read again");
  try {
    CorpusOptions o;
    o.max_lines = static_cast<std::size_t>(recorded_count(corpus.at("max_lines"), "corpus.max_lines"));
    o.holdout_fraction = corpus.at("holdout").get<double>();
    o.paragraphs = corpus.at("paragraphs").get<bool>();
    o.seed = recorded_count(settings.at("seed"), "seed");
    o.max_length = static_cast<std::size_t>(recorded_count(settings.at("flops_seq_len"), "flops_seq_len"));
    TrainingText text;
    if (corpus.contains("labels"))
      text.labels = corpus.at("labels").get<std::string>();
    else
      text.data = corpus.at("data").get<std::vector<std::filesystem::path>>();
    return {text, o};
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("the gates folder's record of its training text is incomplete ({})", e.what()));
  }
}

bool GateTrainingOptions::checkpoints(const std::string& setting, int64_t parameters) {
  return setting == "on" ||
         (setting == "auto" && parameters >= kCheckpointLayersFrom && !models::fused_attention_available());
}

}  // namespace headprune::pruner
