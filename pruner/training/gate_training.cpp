#include "pruner/training/gate_training.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/flops.h"
#include "models/head_costs.h"
#include "models/kv_cache.h"
#include "models/model_family.h"
#include "models/model_size.h"
#include "pruner/atomic_write.h"
#include "pruner/distributed/process_group.h"
#include "pruner/format.h"
#include "pruner/log.h"
#include "pruner/measure/classification.h"
#include "pruner/measure/fidelity.h"
#include "pruner/measure/latency_table.h"
#include "pruner/objectives/chunked_kl.h"
#include "pruner/objectives/distillation.h"
#include "pruner/objectives/task_loss.h"
#include "pruner/training/gate_units.h"
#include "pruner/training/interruption.h"
#include "pruner/training/sparsity_measure.h"
#include "pruner/training/teacher_cache.h"
#include "pruner/training/training_progress.h"
#include "pruner/training/training_run.h"

namespace headprune::pruner {
namespace {

std::vector<double> to_vector(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

/// The most tokens a training batch can hold: the batch size times the longest sequence.
int64_t longest_batch_tokens(const Corpus& corpus, const GateTrainingOptions& o) {
  std::size_t longest = 0;
  for (const auto& sequence : corpus.train) longest = std::max(longest, sequence.size());
  return static_cast<int64_t>(o.batch_size * longest);
}

/// The run's chunked LM head (chunked_lm_head), none with labels: the labelled objective reads the
/// classifier's logits, not a vocabulary's. @throws UsageError for --kl-chunk-tokens N with labels.
std::optional<ChunkedLmHead> chunked_kl_head(TrainingRun& run, const Corpus& corpus, const GateTrainingOptions& o) {
  if (corpus.train_labels.empty())
    return chunked_lm_head(run.model, *run.teacher, longest_batch_tokens(corpus, o), o.kl_chunk_tokens);
  if (o.kl_chunk_tokens > 0)
    throw UsageError(fmt::format("--kl-chunk-tokens {} does not apply to training on labels; leave it out",
                                 o.kl_chunk_tokens));
  return std::nullopt;
}

/// The run's --teacher-top-k, checked: a top-k target needs a vocabulary.
/// @throws UsageError for --teacher-top-k K on a model without an LM head or with labels.
int64_t checked_teacher_top_k(const TrainingRun& run, const Corpus& corpus, const GateTrainingOptions& o) {
  if (o.teacher_top_k == 0) return 0;
  if (!run.model.lm_head_weight().defined() || !corpus.train_labels.empty())
    throw UsageError(fmt::format("--teacher-top-k {} needs a language model distilled over its vocabulary; this run "
                                 "({} model{}) has none; leave it out",
                                 o.teacher_top_k, run.model.config().model_type,
                                 corpus.train_labels.empty() ? "" : ", trained on labels"));
  return o.teacher_top_k;
}

/// With sublayer gates: per layer the log α and P(z ≠ 0) of its attention's and its FFN's gate
/// ({"attention": {"log_alpha", "prob_open"}, "ffn": {...}}); the units' own are folded into theirs.
nlohmann::json sublayer_gates_json(const gates::HardConcreteGates& g, const GateUnits& units) {
  const auto n = static_cast<int64_t>(units.heads_per_layer.size());
  const auto p = g.prob_nonzero().detach();
  nlohmann::json out;
  for (const auto& [name, at] :
       {std::pair{"attention", units.attention_sublayer_gate(0)}, std::pair{"ffn", units.ffn_sublayer_gate(0)}})
    out[name] = {{"log_alpha", to_vector(g.log_alpha.detach().narrow(0, at, n))},
                 {"prob_open", to_vector(p.narrow(0, at, n))}};
  return out;
}

/// Gate values, keep-mask and bookkeeping of the gates as they stand.
GateState snapshot_state(const gates::HardConcreteGates& g, const models::AttentionModel& model,
                         const ModelFingerprint& fingerprint, const gates::SparsityMeasure& measure,
                         const GateTrainingOptions& o, int64_t step, bool complete) {
  const auto units = gate_units(model.config(), o);
  // Per unit: its gate times its sublayer's, and the log α of one gate as likely to be open.
  const auto gate = units.effective(g.deterministic(o.rule));
  const auto score = units.sublayers ? gates::log_alpha_of_probability(measure.alive(g).detach(), g.options())
                                     : g.log_alpha.detach();
  const auto constraints = unit_constraints(model.config(), o, units);
  std::vector<bool> keep =
      o.target_sparsity
          ? gates::keep_mask_for_target(score, units.base_groups(), measure, *o.target_sparsity, constraints,
                                        o.budget())
          : gates::keep_mask_from_gates(gate, score, units.base_groups(), constraints);
  GateState s;
  s.model = fingerprint;
  s.model_path = o.model_path;
  s.settings = o.to_json();
  s.step = step;
  s.complete = complete;
  const auto log_alpha = to_vector(score);
  const auto values = to_vector(gate);
  size_t i = 0;
  for (size_t l = 0; l < units.heads_per_layer.size(); ++l) {
    LayerGates layer;
    layer.heads = model.config().kept_heads[l];
    for (size_t h = 0; h < layer.heads.size(); ++h, ++i) {
      layer.log_alpha.push_back(log_alpha[i]);
      layer.gate.push_back(values[i]);
      layer.keep.push_back(keep[i]);
    }
    s.layers.push_back(std::move(layer));
  }
  for (size_t l = 0; l < units.blocks_per_layer.size(); ++l) {
    FfnLayerGates ffn;
    ffn.block = units.ffn_block;
    ffn.width = units.blocks_per_layer[l] * units.ffn_block;
    for (int64_t b = 0; b < units.blocks_per_layer[l]; ++b, ++i) {
      ffn.log_alpha.push_back(log_alpha[i]);
      ffn.gate.push_back(values[i]);
      ffn.keep.push_back(keep[i]);
    }
    s.ffn.push_back(std::move(ffn));
  }
  if (units.sublayers) s.summary["sublayer_gates"] = sublayer_gates_json(g, units);
  s.summary["expected_l0"] = g.expected_l0().item<double>();
  s.summary["expected_sparsity"] = measure.expected(g).item<double>();
  s.summary["mask_sparsity"] = measure.of_mask(keep);
  s.summary["sparsity_unit"] = gates::to_string(measure.unit);
  return s;
}

/// Largest |expected sparsity − mask sparsity| of a converged run. At the end of a run whose
/// gates settled, the expectation (over the hard-concrete noise) and the mask agree closely:
/// the README's main job ends 0.014 apart, stories260K 0.024; a 20-step run is 0.49 apart.
constexpr double kConvergenceGap = 0.05;

/// Smallest gap between the mean log_alpha of the kept and of the removed heads of a converged
/// run: the README's main job ends 12.4 apart (5.16 vs -7.26), a 20-step run 0.73.
constexpr double kSeparation = 1.0;

/// Mean log_alpha of the kept heads minus that of the removed ones; nullopt when either set
/// is empty.
std::optional<double> log_alpha_separation(const GateState& state) {
  double kept = 0, removed = 0;
  int64_t n_kept = 0, n_removed = 0;
  for (const auto& layer : state.layers)
    for (size_t h = 0; h < layer.heads.size(); ++h) {
      if (layer.keep[h]) {
        kept += layer.log_alpha[h];
        ++n_kept;
      } else {
        removed += layer.log_alpha[h];
        ++n_removed;
      }
    }
  if (n_kept == 0 || n_removed == 0) return std::nullopt;
  return kept / static_cast<double>(n_kept) - removed / static_cast<double>(n_removed);
}

/// Why the gates of `state` (a snapshot_state) have not settled — the expected sparsity is more
/// than kConvergenceGap from the mask's, or kept and removed heads are less than kSeparation
/// apart in mean log_alpha — or nullopt when they have.
std::optional<std::string> convergence_problem(const GateState& state) {
  const double expected = state.summary["expected_sparsity"].get<double>();
  const double mask = state.summary["mask_sparsity"].get<double>();
  const auto separation = log_alpha_separation(state);
  if (std::abs(expected - mask) > kConvergenceGap)
    return fmt::format("expected sparsity {:.3f} against the mask's {:.3f} ({})", expected, mask,
                       state.summary["sparsity_unit"].get<std::string>());
  if (separation && *separation < kSeparation)
    return fmt::format("kept and removed heads are barely apart (mean log_alpha {:.2f} higher for the "
                       "kept ones)", *separation);
  return std::nullopt;
}

/// Past the target: more gates closing than the mask keeps (the multipliers overshot it).
bool overshot(const GateState& state) {
  return state.summary["expected_sparsity"].get<double>() > state.summary["mask_sparsity"].get<double>() + kConvergenceGap;
}

/// Records in the summary whether the gates settled (`converged`, convergence_problem) and, if
/// not, a warning (`convergence_warning`), also logged: the mask was then chosen among gates
/// still open. `extra_steps`: gate steps added for convergence beyond --steps.
void record_convergence(GateState& state, int64_t extra_steps) {
  if (const auto separation = log_alpha_separation(state)) state.summary["log_alpha_separation"] = *separation;
  const auto why = convergence_problem(state);
  state.summary["converged"] = !why;
  if (!why) return;
  const auto warning = fmt::format(
      "the gates had not converged{}: {}; {}",
      extra_steps > 0 ? fmt::format(" after {} steps more than --steps (--max-extra-steps)", extra_steps) : "",
      *why,
      overshot(state) ? "more gates were closing than the target keeps (the Lagrangian overshot it): train with a "
                 "higher --lambda-damping or a lower --lambda-lr"
               : "the heads removed were chosen among gates still undecided: train longer (--steps) or with "
                 "a higher --lr");
  state.summary["convergence_warning"] = warning;
  log::warn("{}", warning);
}

/// Bytes a cached number takes in the F16 KV cache --target-kv-bytes counts.
constexpr double kKvBytesPerValue = 2;

/// A budget in its unit's cost: what the dense model holds and what the budget allows —
/// parameters of the whole model (--target-params), forward FLOPs per token at
/// flops_seq_len (--target-flops), predicted milliseconds (--target-latency) or F16 KV-cache
/// bytes per token (--target-kv-bytes). `per_cost`: budget units per unit of the sparsity
/// measure's cost (2 bytes per cached number; 1 for the others).
struct Budget {
  double dense = 0;
  double allowed = 0;
  double per_cost = 1;
};

Budget budget_of(const GateTrainingOptions& o, const models::AttentionModel& model) {
  if (o.target_kv_bytes) {
    const double dense = kKvBytesPerValue * static_cast<double>(models::kv_values_per_token(model.config()));
    const auto [value, percent] = parse_budget(*o.target_kv_bytes, "--target-kv-bytes");
    return {dense, percent ? dense * value / 100 : value, kKvBytesPerValue};
  }
  if (o.target_latency) {
    const double dense = o.latency_table->predicted_ms_of(model.config());
    const auto [value, percent] = parse_budget(*o.target_latency, "--target-latency");
    return {dense, percent ? dense * value / 100 : value};
  }
  if (o.target_params) {
    const auto dense = static_cast<double>(models::parameter_count(model));
    const auto [value, percent] = parse_budget(*o.target_params, "--target-params");
    return {dense, percent ? dense * value / 100 : value};
  }
  const double dense = models::forward_flops_per_token(model.config(), o.flops_seq_len);
  return {dense, *o.target_flops * dense};
}

/// ", FFN widths a b c of N" for a state with FFN gates, else empty.
std::string ffn_kept_note(const GateState& state) {
  if (state.ffn.empty()) return "";
  std::vector<int64_t> widths;
  for (const auto& layer : state.ffn) widths.push_back(layer.kept_width());
  return fmt::format(", FFN widths {} of {}", fmt::join(widths, " "), state.ffn.front().width);
}

/// The keep-mask of `state` over the units: every head's, then every FFN block's.
std::vector<bool> state_keep(const GateState& state) {
  std::vector<bool> keep;
  for (const auto& layer : state.layers) keep.insert(keep.end(), layer.keep.begin(), layer.keep.end());
  for (const auto& layer : state.ffn) keep.insert(keep.end(), layer.keep.begin(), layer.keep.end());
  return keep;
}

/// With a budget: what it allows and what the final mask leaves — parameters (the dense count
/// less the attention and FFN parameters the removed units free, models/head_costs.h) or
/// forward FLOPs per token (models::forward_flops_per_token of the pruned config) — in the
/// summary and the log.
void record_budget(GateState& state, const models::AttentionModel& model, const GateTrainingOptions& o) {
  if (!o.budget()) return;
  const auto& config = model.config();
  const auto after = config_after(config, gate_units(config, o), state_keep(state));
  const auto budget = budget_of(o, model);
  if (o.target_latency) {
    const double achieved = o.latency_table->predicted_ms_of(after);
    state.summary["target_latency_ms"] = budget.allowed;
    state.summary["predicted_latency_ms"] = achieved;
    state.summary["dense_latency_ms"] = budget.dense;
    state.summary["latency_shape"] = {{"batch_size", o.latency_batch_size}, {"seq_len", o.latency_seq_len}};
    log::info("latency budget {:.3g} ms at batch {} x seq {}: the latency table predicts {:.3g} ms for the pruned "
              "model ({:.3g} ms dense); measure it with bench",
              budget.allowed, o.latency_batch_size, o.latency_seq_len, achieved, budget.dense);
    return;
  }
  if (o.target_kv_bytes) {
    const double achieved = kKvBytesPerValue * static_cast<double>(models::kv_values_per_token(after));
    state.summary["target_kv_bytes_per_token"] = budget.allowed;
    state.summary["achieved_kv_bytes_per_token"] = achieved;
    state.summary["dense_kv_bytes_per_token"] = budget.dense;
    log::info("KV-cache budget {:.0f} bytes per token at F16 (--target-kv-bytes {}): the pruned model caches {:.0f} "
              "({:.1f}% of the dense model's {:.0f})",
              budget.allowed, *o.target_kv_bytes, achieved, 100 * achieved / budget.dense, budget.dense);
    return;
  }
  if (o.target_params) {
    const auto prunable = [](const models::ModelConfig& c) {
      return models::attention_parameters(c) + models::ffn_parameters(c);
    };
    const auto achieved = static_cast<int64_t>(budget.dense) - (prunable(config) - prunable(after));
    state.summary["target_params"] = budget.allowed;
    state.summary["achieved_params"] = achieved;
    log::info("parameter budget {:.0f} (--target-params {}): the pruned model keeps {} of {:.0f} parameters",
              budget.allowed, *o.target_params, achieved, budget.dense);
    return;
  }
  const double achieved = models::forward_flops_per_token(after, o.flops_seq_len);
  state.summary["target_flops_per_token"] = budget.allowed;
  state.summary["achieved_flops_per_token"] = achieved;
  log::info("FLOPs budget {:.4g} per token at {} tokens ({:.1f}% of the dense model's): the pruned model needs {:.4g} "
            "({:.1f}%)",
            budget.allowed, o.flops_seq_len, 100 * *o.target_flops, achieved, 100 * achieved / budget.dense);
}

/// The state at the end of the gate phase (after `gate_steps` steps). A head the target keeps while its deterministic
/// gate is 0 (training ended closing more gates than the target asks) would be dead weight at
/// 0: it is kept at gate 1 instead.
GateState final_gate_state(const gates::HardConcreteGates& g, const models::AttentionModel& model,
                           const ModelFingerprint& fingerprint, const gates::SparsityMeasure& measure,
                           const GateTrainingOptions& o, int64_t gate_steps) {
  auto state = snapshot_state(g, model, fingerprint, measure, o, gate_steps, true);
  int64_t reopened = 0;
  for (auto& layer : state.layers)
    for (size_t h = 0; h < layer.heads.size(); ++h)
      if (layer.keep[h] && layer.gate[h] <= 0) {
        layer.gate[h] = 1.0;
        ++reopened;
      }
  for (auto& layer : state.ffn)
    for (size_t b = 0; b < layer.keep.size(); ++b)
      if (layer.keep[b] && layer.gate[b] <= 0) {
        layer.gate[b] = 1.0;
        ++reopened;
      }
  if (reopened > 0)
    log::info("{} kept head(s) or FFN block(s) had a closed gate (training ended sparser than the target); they "
              "are kept at gate 1",
              reopened);
  state.summary["reopened_heads"] = reopened;
  state.summary["gate_steps"] = gate_steps;
  record_convergence(state, gate_steps - o.steps);
  record_budget(state, model, o);
  return state;
}

/// Multipliers that make the gated model compute what the pruned model will: kept heads (and
/// FFN neurons) get their deterministic gate value, removed ones 0.
UnitMultipliers final_multipliers(const GateState& s, const torch::Device& device) {
  UnitMultipliers m;
  const auto masked = [&](const std::vector<double>& gate, const std::vector<bool>& keep, int64_t repeat) {
    std::vector<float> v;
    for (size_t i = 0; i < gate.size(); ++i) v.insert(v.end(), static_cast<size_t>(repeat), keep[i] ? static_cast<float>(gate[i]) : 0.F);
    return torch::tensor(v).to(device);
  };
  for (const auto& layer : s.layers) m.heads.push_back(masked(layer.gate, layer.keep, 1));
  for (const auto& layer : s.ffn) m.ffn.push_back(masked(layer.gate, layer.keep, layer.block));
  return m;
}

/// With --uniform-layers and a target the final head counts are known before training: say
/// which readers will load the export (ModelFamily::layout_warning), as the export will.
void announce_uniform_export(const models::ModelConfig& config, const gates::SparsityMeasure& measure,
                             const GateTrainingOptions& o) {
  if (!o.constraints.uniform_layers || !o.target_sparsity) return;
  const auto& c = constraints_for(config, o.constraints);
  const auto keep = gates::keep_mask_for_target(torch::zeros({config.total_heads()}), config.heads_per_layer(),
                                                measure, *o.target_sparsity, c, o.budget());
  const auto after = config_after(config, GateUnits{config.heads_per_layer(), {}, 0}, keep);
  const auto heads = after.kept_heads.front().size();
  if (auto warning = config.family().layout_warning(after))
    log::warn("--uniform-layers: every layer will keep {} heads; {}", heads, *warning);
  else
    log::info("--uniform-layers: every layer will keep {} heads ({})", heads, config.family().export_note(after));
}

/// Everything checked before anything loads or trains; returns the sparsity measure.
/// @throws headprune::Error for an unreachable target, bad step counts or an empty corpus.
gates::SparsityMeasure checked_measure(const models::ModelConfig& config, const Corpus& corpus,
                                       const GateTrainingOptions& o) {
  const auto units = gate_units(config, o);
  const auto measure = unit_measure(config, o, units);
  if (o.target_sparsity)
    gates::validate_target(*o.target_sparsity, units.base_groups(), measure, unit_constraints(config, o, units));
  if (o.steps < 1) throw Error("--steps must be at least 1");
  if (o.train_weights && o.finetune_steps < 1)
    throw Error("--train-weights needs --finetune-steps of at least 1");
  if (corpus.train.empty()) throw Error("the corpus has no training sequences");
  if (o.distill_layers > 0 && config.num_hidden_layers < 2)
    throw Error("--distill-layers matches every layer but the last, and this model has only one layer");
  announce_uniform_export(config, measure, o);
  return measure;
}

/// What one step computed, for the progress log (summed over the ranks).
struct StepResult {
  bool gate_phase = true;
  double loss = 0;
  double target = 0;
  torch::Tensor regularizer;
  torch::Tensor expected_sparsity;
};

/// One gate-training run, step by step. Phase 1 (steps [0, steps)): the gates and the
/// multipliers train, the weights are frozen. Phase 2 (--train-weights, steps [steps, total)):
/// the mask is fixed, the weights train. In a data-parallel job every rank runs the same loop on
/// its share of each batch; the gradients are summed over the ranks before each optimiser
/// step, so all ranks keep identical gates, multipliers and weights. Only rank 0 writes files.
class GateTrainer {
 public:
  GateTrainer(models::Checkpoint& ckpt, const Corpus& corpus, const GateTrainingOptions& o,
              const ProcessGroup& group, std::shared_ptr<models::AttentionModel> dense)
      : ckpt_(ckpt),
        corpus_(corpus),
        o_(o),
        group_(group),
        units_(gate_units(ckpt.model->config(), o)),
        measure_(checked_measure(ckpt.model->config(), corpus, o)),
        warmup_(o.warmup_steps >= 0 ? o.warmup_steps : (o.steps * 2) / 5),
        max_extra_steps_(o.max_extra_steps >= 0 ? o.max_extra_steps : o.steps),
        fingerprint_(fingerprint_of(*ckpt.model)),
        run_(ckpt, o, std::move(dense)),
        chunked_(chunked_kl_head(run_, corpus, o)),  // refused settings before the out dir is touched
        teacher_top_k_(checked_teacher_top_k(run_, corpus, o)),
        resumed_(prepare_out_dir()),
        start_(resumed_.step),
        gate_steps_(resumed_.gate_steps),
        stream_(corpus.train, o.batch_size, corpus.pad_id, o.seed),
        progress_(group.is_main() ? std::make_optional<TrainingProgress>(o.out_dir, o.resume) : std::nullopt),
        teacher_cache_(o.teacher_cache_mib) {
    stream_.skip(start_);
    run_.model.set_output_hidden_states(o.distill_layers > 0);
    run_.teacher->set_output_hidden_states(o.distill_layers > 0);
  }
  ~GateTrainer() { run_.model.set_output_hidden_states(false); }
  GateTrainer(const GateTrainer&) = delete;
  GateTrainer& operator=(const GateTrainer&) = delete;

  GateState run() {
    log_start();
    const InterruptGuard guard;  // SIGINT / SIGTERM: finish the step, snapshot, stop
    const auto t0 = std::chrono::steady_clock::now();
    auto last_save = t0;
    for (int64_t step = start_; step < total_steps(); ++step) {
      const auto result = train_step(step);
      const int64_t done = step + 1;
      if (done % o_.log_every == 0 || done == gate_steps_ || done == total_steps())
        log_step(done, result, seconds_since(t0));
      if (done == gate_steps_) extend_unless_converged(done);
      if (done == total_steps()) break;
      if (signal_) stop_on_signal(signal_, done);
      const bool by_time = o_.save_every_minutes > 0 && seconds_since(last_save) >= 60 * o_.save_every_minutes;
      if ((o_.save_every > 0 && done % o_.save_every == 0) || by_time) {
        save(done);
        last_save = std::chrono::steady_clock::now();
      }
      if (o_.stop_after > 0 && done - start_ >= o_.stop_after) {
        log::info("stopped after {} steps as asked; continue with --resume", done - start_);
        return save(done);
      }
    }
    return finish(seconds_since(t0));
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  /// The step the run ends at when its gate phase ends at `gate_steps`.
  int64_t finetune_end(int64_t gate_steps) const { return gate_steps + (o_.train_weights ? o_.finetune_steps : 0); }
  /// Where the run ends now (gate_steps_ + --finetune-steps with --train-weights).
  int64_t total_steps() const { return finetune_end(gate_steps_); }

  /// Creates the gates folder and, with --resume, restores the snapshot; the first step and
  /// where the gate phase ends.
  ResumePoint prepare_out_dir() {
    if (group_.is_main()) std::filesystem::create_directories(o_.out_dir);
    if (!o_.resume) return {0, o_.steps};
    const auto point = resume_from_snapshot(run_, o_, fingerprint_);
    log::info("resuming at step {} of {}", point.step, finetune_end(point.gate_steps));
    return point;
  }

  /// At the planned end of the gate phase (`done` == gate_steps_): if the gates have not
  /// converged (convergence_problem) and --max-extra-steps allows, the gate phase goes on for a
  /// block of a tenth of --steps (at least 1), said in the log. Not when the multipliers
  /// overshot the target: without damping (--lambda-damping 0) more steps at the same rates
  /// moved MiniLM further past it (expected sparsity 0.585 -> 0.638 over 300 more steps at 50%,
  /// docs/results.md), so the run ends and its warning names the remedy. Every rank decides
  /// alike: the gates are identical on all of them.
  void extend_unless_converged(int64_t done) {
    const int64_t extra = gate_steps_ - o_.steps;
    if (extra >= max_extra_steps_) return;
    const auto state = snapshot_state(*run_.gates, run_.model, fingerprint_, measure_, o_, done, false);
    const auto why = convergence_problem(state);
    if (!why) return;
    if (overshot(state)) {
      log::info("step {}: the gates overshot the target ({}); training on at the same rates does not bring them back, "
                "so the gate phase ends here",
                done, *why);
      return;
    }
    const int64_t block = std::min(std::max<int64_t>(o_.steps / 10, 1), max_extra_steps_ - extra);
    gate_steps_ += block;
    log::info("step {}: the gates have not converged ({}); training them {} steps more ({} of at most {} extra "
              "steps, --max-extra-steps)",
              done, *why, block, gate_steps_ - o_.steps, max_extra_steps_);
  }

  void log_start() const {
    log::info("training gates: {} heads{} in {} layers, {} steps{}, batch {}{}, {} training / {} held-out "
              "sequences, {}",
              units_.total_heads(),
              units_.ffn_block > 0 ? fmt::format(" and {} FFN blocks of {} neurons", units_.total_blocks(), units_.ffn_block)
                                   : "",
              ckpt_.model->config().num_hidden_layers, o_.steps,
              max_extra_steps_ > 0 ? fmt::format(" (up to {} more until they converge)", max_extra_steps_) : "",
              o_.batch_size,
              group_.distributed() ? fmt::format(" (shared by {} ranks)", group_.world_size()) : "",
              corpus_.train.size(), corpus_.heldout.size(),
              o_.target_sparsity
                  ? fmt::format("target sparsity {} ({}) by Lagrangian, warm-up {} steps",
                                *o_.target_sparsity, gates::to_string(o_.unit), warmup_)
                  : fmt::format("fixed L0 penalty lambda {}", o_.l0_lambda));
    if (teacher_top_k_ > 0)
      log::info("distilling the teacher's top {} next tokens and one bucket for the rest (--teacher-top-k): "
                "a lower bound of the whole KL", teacher_top_k_);
    if (chunked_)
      log::info("KL over the vocabulary {} tokens at a time (--kl-chunk-tokens): no batch's whole logits are held",
                chunked_->chunk_tokens);
    if (!corpus_.train_labels.empty())
      log::info("objective: {} x the labels' cross-entropy + {} x distillation to the dense model (--label-weight)",
                o_.label_weight, 1 - o_.label_weight);
  }

  /// One optimisation step: the teacher's target (cached while frozen), a sample of the gates
  /// (or the fixed mask in phase 2; the same on every rank: the noise is seeded by the step),
  /// distillation + regulariser, and the optimisers' steps.
  StepResult train_step(int64_t step) {
    StepResult r;
    r.gate_phase = step < gate_steps_;
    if (!r.gate_phase && fixed_.empty()) end_gate_phase();
    torch::manual_seed(o_.seed + static_cast<uint64_t>(step) * 7919ULL);  // noise: resumable
    auto in = stream_.next(o_.device, group_.rank(), group_.world_size());
    const ScopedLogitsOff logits_off({&run_.model, run_.teacher.get()}, chunked_.has_value());
    const auto targets = teacher_cache_.get(stream_.last_bucket(), [&] {
      return teacher_targets(run_.teacher->forward(in, nullptr), teacher_top_k_, chunked_ ? &*chunked_ : nullptr);
    });
    auto& g = *run_.gates;
    const auto multipliers = r.gate_phase ? units_.multipliers(g.sample()) : fixed_;
    last_ = objective(run_.model.forward(in, multipliers.view()), targets, in.attention_mask);
    r.target = o_.target_sparsity ? gates::ramped_target(*o_.target_sparsity, step, warmup_) : 0;
    r.expected_sparsity = measure_.expected(g);
    r.regularizer = !r.gate_phase         ? torch::zeros({}, r.expected_sparsity.options())
                    : o_.target_sparsity ? run_.lagrangian->penalty(r.expected_sparsity, r.target)
                                         : gates::fixed_l0_penalty(g, o_.l0_lambda);
    // Each rank's distillation term is its share of the batch's; the regulariser is counted once.
    backward(last_.total + r.regularizer / group_.world_size());
    agree_on_step(in);
    r.loss = last_.total.item<double>() + r.regularizer.item<double>();
    if (!std::isfinite(r.loss))
      throw Error(fmt::format("the loss became {} at step {} (distillation {}, regulariser {}); "
                              "lower --lr or check the corpus",
                              r.loss, step, last_.total.item<double>(), r.regularizer.item<double>()));
    step_optimisers(r.gate_phase);
    return r;
  }

  /// The step's loss: distillation to the teacher's `targets` (teacher_targets), plus the
  /// layer-wise term with --distill-layers and the labels' cross-entropy with labelled text.
  DistillationLoss objective(const models::ModelOutput& student, const TeacherTargets& targets,
                             const torch::Tensor& attention_mask) const {
    auto loss = distillation(student, targets, attention_mask, ckpt_.pooling, o_.embedding_weight, global_sum(),
                             chunked_ ? &*chunked_ : nullptr);
    if (o_.distill_layers > 0)
      loss = with_layer_loss(loss,
                             layer_distillation(distilled_layers(student.hidden_states), targets.layers,
                                                attention_mask, global_sum()),
                             o_.distill_layers);
    if (!corpus_.train_labels.empty()) loss = with_label_loss(loss, label_loss(student, attention_mask), o_.label_weight);
    return loss;
  }

  /// The classifier's cross-entropy to the gold labels of the batch's rows (labelled text);
  /// attention_mask [batch, seq] of the batch.
  torch::Tensor label_loss(const models::ModelOutput& student, const torch::Tensor& attention_mask) const {
    std::vector<int64_t> labels;
    for (auto row : stream_.last_rows()) labels.push_back(corpus_.train_labels[row]);
    const auto logits = classifier_logits(ckpt_, run_.model, student.last_hidden_state, attention_mask);
    return label_cross_entropy(logits, torch::tensor(labels, torch::kLong).to(logits.device()), global_sum());
  }

  /// The batch statistics' sum over the ranks (empty in a single process: nothing to sum).
  GlobalSum global_sum() const {
    if (!group_.distributed()) return {};
    return [this](const torch::Tensor& t) { return group_.summed(t); };
  }

  void backward(const torch::Tensor& total) {
    run_.gate_optimizer.zero_grad();
    run_.lambda_optimizer.zero_grad();
    if (run_.weights_optimizer) run_.weights_optimizer->zero_grad();
    if (total.requires_grad()) total.backward();  // a rank with no rows in phase 2 has nothing
  }

  /// One collective: the loss parts, the tokens and the stop signals of the step, summed over
  /// the ranks, so every rank logs, checks and stops alike.
  void agree_on_step(const models::ModelInputs& in) {
    const auto value = [](const torch::Tensor& t) { return t.defined() ? t.item<double>() : 0.0; };
    const int local_signal = interrupt_signal();
    auto stats = torch::tensor({value(last_.total), value(last_.hidden), value(last_.embedding), value(last_.kl),
                                value(last_.label), in.attention_mask.sum().item<double>(),
                                static_cast<double>(local_signal), local_signal ? 1.0 : 0.0, value(last_.layers)},
                               torch::kDouble);
    group_.all_reduce_sum(stats);
    const auto sum = [&](int64_t i) { return stats[i].item<double>(); };
    for (auto [part, i] : {std::pair{&last_.total, 0}, {&last_.hidden, 1}, {&last_.embedding, 2}, {&last_.kl, 3},
                           {&last_.label, 4}, {&last_.layers, 8}})
      if (part->defined()) *part = torch::tensor(sum(i));
    tokens_ += sum(5);
    const double signalled = sum(7);
    signal_ = local_signal ? local_signal : signalled > 0 ? static_cast<int>(std::lround(sum(6) / signalled)) : 0;
  }

  void step_optimisers(bool gate_phase) {
    if (gate_phase) {
      group_.sum_gradients({run_.gates->log_alpha, run_.lagrangian->lambda_1, run_.lagrangian->lambda_2});
      run_.lagrangian->flip_gradients();
      run_.gate_optimizer.step();
      if (o_.target_sparsity) run_.lambda_optimizer.step();
    } else {
      if (!trained_weights_.empty()) group_.sum_gradients(trained_weights_);
      run_.weights_optimizer->step();
    }
  }

  /// Fixes the mask (final_gate_state) and, with --train-weights, unfreezes the weights.
  void end_gate_phase() {
    final_state_ = final_gate_state(*run_.gates, run_.model, fingerprint_, measure_, o_, gate_steps_);
    if (o_.train_weights && o_.fix_mask) fix_mask_before_weights();
    fixed_ = final_multipliers(final_state_, o_.device);
    if (!o_.train_weights) return;
    trained_weights_ = weights_to_train();
    for (auto& p : trained_weights_) p.set_requires_grad(true);
    log::info("gates fixed ({} of {} heads kept{}); fine-tuning the weights{} for {} steps, lr {}",
              final_state_.heads_kept(), final_state_.heads_total(), ffn_kept_note(final_state_),
              o_.finetune_pruned_layers ? fmt::format(" of the layers that lost units, {}", pruned_layers_note()) : "",
              o_.finetune_steps, o_.weights_learning_rate);
  }

  /// The layers the fixed mask removes a head or an FFN block from.
  std::vector<int64_t> pruned_layers() const {
    const auto lost = [](const std::vector<bool>& keep) { return std::find(keep.begin(), keep.end(), false) != keep.end(); };
    std::vector<int64_t> layers;
    for (std::size_t l = 0; l < final_state_.layers.size(); ++l)
      if (lost(final_state_.layers[l].keep) || (l < final_state_.ffn.size() && lost(final_state_.ffn[l].keep)))
        layers.push_back(static_cast<int64_t>(l));
    return layers;
  }

  /// The weights the weights phase trains: every one, or with --finetune-pruned-layers those of
  /// the layers the fixed mask removed a unit from.
  std::vector<torch::Tensor> weights_to_train() const {
    if (!o_.finetune_pruned_layers) return run_.model.parameters();
    std::vector<torch::Tensor> weights;
    for (auto l : pruned_layers()) {
      const auto layer = run_.model.layer_parameters(l);
      weights.insert(weights.end(), layer.begin(), layer.end());
    }
    return weights;
  }

  /// "layers 0 2 5 (1.2M of 22.7M parameters)" for the log.
  std::string pruned_layers_note() const {
    int64_t n = 0;
    for (const auto& p : trained_weights_) n += p.numel();
    return fmt::format("layers {} ({} of {} parameters)", fmt::join(pruned_layers(), " "),
                       human_count(static_cast<double>(n)),
                       human_count(static_cast<double>(models::parameter_count(run_.model))));
  }

  /// o_.fix_mask on final_state_, every rank alike, rank 0's result kept and saved (kFixedMaskFile).
  /// A run resumed past the gate phase reads the saved mask back instead: its weights have moved
  /// since the mask was fixed, so fixing it again could give another one.
  void fix_mask_before_weights() {
    const auto saved = o_.out_dir / kFixedMaskFile;
    if (o_.resume && start_ > gate_steps_ && std::filesystem::exists(saved)) {
      final_state_ = GateState::from_json(models::read_json_file(saved), saved.string());
      log::info("the weights phase resumes on the mask fixed before it ({})", saved.string());
      return;
    }
    o_.fix_mask(final_state_);
    if (group_.distributed()) take_main_ranks_mask(final_state_);
    if (group_.is_main()) write_file_atomic(saved, final_state_.to_json().dump(1) + "\n");
  }

  /// Every rank's `state` gets rank 0's keep-mask and gate values (a sum over the ranks of
  /// rank 0's values and everyone else's zeros).
  void take_main_ranks_mask(GateState& state) const {
    std::vector<double> values;
    const auto add = [&](const std::vector<bool>& keep, const std::vector<double>& gate) {
      for (std::size_t i = 0; i < keep.size(); ++i) values.insert(values.end(), {keep[i] ? 1.0 : 0.0, gate[i]});
    };
    for (const auto& l : state.layers) add(l.keep, l.gate);
    for (const auto& l : state.ffn) add(l.keep, l.gate);
    auto t = torch::tensor(values, torch::kDouble);
    if (!group_.is_main()) t.zero_();
    group_.all_reduce_sum(t);
    std::size_t next = 0;
    const auto take = [&](std::vector<bool>& keep, std::vector<double>& gate) {
      for (std::size_t i = 0; i < keep.size(); ++i, next += 2) {
        keep[i] = t[static_cast<int64_t>(next)].item<double>() > 0.5;
        gate[i] = t[static_cast<int64_t>(next + 1)].item<double>();
      }
    };
    for (auto& l : state.layers) take(l.keep, l.gate);
    for (auto& l : state.ffn) take(l.keep, l.gate);
  }

  void log_step(int64_t done, const StepResult& r, double seconds) {
    StepProgress p;
    p.done = done;
    p.total_steps = total_steps();
    p.gate_phase = r.gate_phase;
    p.loss = r.loss;
    p.parts = last_;
    p.regularizer = r.regularizer.item<double>();
    p.expected_l0 = run_.gates->expected_l0().item<double>();
    p.total_heads = run_.gates->total_heads();
    p.target = r.target;
    p.expected_sparsity = r.expected_sparsity.item<double>();
    p.lambda_1 = run_.lagrangian->lambda_1.item<double>();
    p.lambda_2 = run_.lagrangian->lambda_2.item<double>();
    p.tokens_per_second = tokens_ / std::max(seconds, 1e-9);
    p.seconds = seconds;
    p.eta_seconds = seconds / static_cast<double>(done - start_) * static_cast<double>(total_steps() - done);
    if (progress_) progress_->log(p);
  }

  /// Saves a snapshot after step `done` and ends the run with Interrupted.
  [[noreturn]] void stop_on_signal(int signal_number, int64_t done) {
    save(done);
    if (!group_.is_main())
      throw Interrupted(signal_number, fmt::format("rank {}: stopped with the other ranks after step {}",
                                                   group_.rank(), done));
    throw Interrupted(signal_number,
                      fmt::format("{} received: stopped after step {} of {} with a snapshot in {}; "
                                  "continue with the same command and --resume",
                                  signal_name(signal_number), done, total_steps(), o_.out_dir.string()));
  }

  /// A snapshot for --resume: the gate state so far (gates.json, incomplete) and train_state.pt,
  /// written by rank 0. Returns that state.
  GateState save(int64_t step) {
    auto state = snapshot_state(*run_.gates, run_.model, fingerprint_, measure_, o_, step, false);
    if (!group_.is_main()) return state;
    state.save(o_.out_dir);
    save_snapshot(run_, o_.out_dir, step, gate_steps_);
    return state;
  }

  /// The final state: mask, fine-tuned weights, held-out fidelity; saved as gates.json.
  GateState finish(double seconds) {
    if (fixed_.empty()) end_gate_phase();
    auto state = final_state_;
    state.step = total_steps();
    if (!group_.is_main()) return state;  // rank 0 measures and writes
    if (o_.train_weights) {
      save_weights(run_.model, o_.out_dir);
      state.trained_model = fingerprint_of(run_.model);
    }
    const auto fidelity = measure_fidelity(run_.model, fixed_.view(), *run_.teacher, corpus_.heldout,
                                           corpus_.pad_id, ckpt_.pooling, o_.batch_size, o_.device);
    state.summary["heldout_fidelity"] = fidelity.to_json();
    if (auto accuracy = heldout_accuracy(ckpt_, run_.model, fixed_.view(), *run_.teacher, corpus_, o_.batch_size, o_.device);
        !accuracy.is_null())
      state.summary["heldout_accuracy"] = accuracy;
    state.summary["train_seconds"] = seconds;
    state.summary["tokens_per_second"] = tokens_ / std::max(seconds, 1e-9);
    state.summary["final_loss"] = last_.parts();
    state.save(o_.out_dir);
    std::error_code ec;
    std::filesystem::remove(o_.out_dir / kSnapshotFile, ec);
    std::filesystem::remove(o_.out_dir / kFixedMaskFile, ec);
    for (auto& p : run_.model.parameters()) p.set_requires_grad(false);
    log::info("gates trained in {}: {} of {} heads kept{}; fidelity to the dense model on {}",
              human_duration(seconds), state.heads_kept(), state.heads_total(), ffn_kept_note(state),
              fidelity.describe());
    return state;
  }

  models::Checkpoint& ckpt_;
  const Corpus& corpus_;
  const GateTrainingOptions& o_;
  const ProcessGroup& group_;
  const GateUnits units_;
  const gates::SparsityMeasure measure_;
  const int64_t warmup_;
  const int64_t max_extra_steps_;  ///< gate steps extend_unless_converged may add
  const ModelFingerprint fingerprint_;
  TrainingRun run_;
  const std::optional<ChunkedLmHead> chunked_;  ///< the KL's LM head when chunked (pruner/objectives/chunked_kl.h)
  const int64_t teacher_top_k_;                 ///< --teacher-top-k, checked (0 = whole distribution)
  const ResumePoint resumed_;
  const int64_t start_;
  int64_t gate_steps_;  ///< where the gate phase ends: --steps, plus any extension
  BatchStream stream_;
  std::optional<TrainingProgress> progress_;  ///< rank 0 only
  TeacherCache teacher_cache_;
  double tokens_ = 0;
  int signal_ = 0;                   ///< SIGINT/SIGTERM received by any rank this step
  DistillationLoss last_;
  GateState final_state_;            ///< the gates' final state, fixed at the end of phase 1
  UnitMultipliers fixed_;            ///< its multipliers, used in phase 2 and for fidelity
  std::vector<torch::Tensor> trained_weights_;  ///< the weights phase 2 trains (weights_to_train)
};

}  // namespace

namespace {

/// The budget's flag as the user gave it, and what its unit counts.
std::pair<std::string, std::string> budget_flag(const GateTrainingOptions& o) {
  if (o.target_latency)
    return {"--target-latency " + *o.target_latency,
            fmt::format("ms at batch {} x seq {}", o.latency_batch_size, o.latency_seq_len)};
  if (o.target_params) return {"--target-params " + *o.target_params, "parameters"};
  if (o.target_kv_bytes) return {"--target-kv-bytes " + *o.target_kv_bytes, "KV-cache bytes per token"};
  return {fmt::format("--target-flops {:.10g}%", 100 * *o.target_flops), "FLOPs per token"};
}

/// Why a budget cannot be reached with every unit removed, for with_budget's refusal.
std::string removable_rest(const GateTrainingOptions& o) {
  if (o.gates_ffn()) return "embeddings and the kept minimum are the rest";
  if (o.target_kv_bytes) return "a layer that keeps a head keeps its KV group; --min-heads-per-layer 0 lets it go";
  return "heads are only part of the model; --prune heads,ffn gates the FFN too";
}

}  // namespace

GateTrainingOptions with_budget(const GateTrainingOptions& o, const models::AttentionModel& model) {
  if (!o.budget()) return o;
  auto effective = o;
  effective.unit = o.target_latency    ? gates::SparsityUnit::kLatency
                   : o.target_params   ? gates::SparsityUnit::kAttentionParams
                   : o.target_kv_bytes ? gates::SparsityUnit::kKvCache
                                       : gates::SparsityUnit::kFlops;
  if (o.target_latency && !o.latency_table)
    throw std::logic_error("with_budget: --target-latency needs the latency table its job measures "
                           "(pruner/jobs/latency_measurement.h provide_latency_table)");
  const auto& config = model.config();
  const auto units = gate_units(config, effective);
  const auto measure = unit_measure(config, effective, units);
  const auto budget = budget_of(effective, model);
  const double removable = gates::max_sparsity(units.base_groups(), measure, unit_constraints(config, effective, units)) *
                           measure.total_cost * budget.per_cost;
  const auto [flag, unit] = budget_flag(o);
  if (budget.allowed >= budget.dense)
    throw Error(fmt::format("{}: the dense model needs {:.4g} {}, already within the budget", flag, budget.dense,
                            unit));
  if (budget.dense - removable > budget.allowed)
    throw Error(fmt::format("{}: at least {:.4g} {} remain with every head{} removed that --min-heads-per-layer {} "
                            "allows ({}); raise the budget or lower the minimum",
                            flag, budget.dense - removable, unit, o.gates_ffn() ? " and FFN block" : "",
                            o.constraints.min_heads_per_layer,
                            removable_rest(o)));
  effective.target_sparsity = (budget.dense - budget.allowed) / (measure.total_cost * budget.per_cost);
  return effective;
}

GateState train_gates(models::Checkpoint& ckpt, const Corpus& corpus, const GateTrainingOptions& o,
                      const ProcessGroup& group, std::shared_ptr<models::AttentionModel> dense) {
  const auto effective = with_budget(o, *ckpt.model);
  return GateTrainer(ckpt, corpus, effective, group, std::move(dense)).run();
}

}  // namespace headprune::pruner
