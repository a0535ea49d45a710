#include "pruner/gate_training.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <unordered_map>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/distillation.h"
#include "pruner/fidelity.h"
#include "pruner/format.h"
#include "pruner/head_costs.h"
#include "pruner/log.h"

namespace headprune::pruner {
namespace {

constexpr const char* kSnapshot = "train_state.pt";

std::vector<double> to_vector(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

/// Writes the fine-tuned weights to `<dir>/weights.safetensors` (temporary file, then rename).
void save_weights(const models::AttentionModel& model, const std::filesystem::path& dir) {
  const auto file = dir / GateState::kWeightsFile;
  const auto tmp = dir / (std::string(GateState::kWeightsFile) + ".tmp");
  models::save_safetensors(tmp, models::state_dict(model));
  std::filesystem::rename(tmp, file);
}

/// Gate values, keep-mask and bookkeeping of the gates as they stand.
GateState snapshot_state(const gates::HardConcreteGates& g, const models::AttentionModel& model,
                         const ModelFingerprint& fingerprint, const gates::SparsityMeasure& measure,
                         const GateTrainingOptions& o, int64_t step, bool complete) {
  auto gate = g.deterministic(o.rule);
  const auto constraints = constraints_for(model.config(), o.constraints);
  std::vector<bool> keep =
      o.target_sparsity
          ? gates::keep_mask_for_target(g.log_alpha, g.heads_per_layer(), measure,
                                        *o.target_sparsity, constraints)
          : gates::keep_mask_from_gates(gate, g.log_alpha, g.heads_per_layer(), constraints);
  GateState s;
  s.model = fingerprint;
  s.model_path = o.model_path;
  s.settings = o.to_json();
  s.step = step;
  s.complete = complete;
  const auto log_alpha = to_vector(g.log_alpha);
  const auto values = to_vector(gate);
  size_t i = 0;
  for (size_t l = 0; l < g.heads_per_layer().size(); ++l) {
    LayerGates layer;
    layer.heads = model.config().kept_heads[l];
    for (size_t h = 0; h < layer.heads.size(); ++h, ++i) {
      layer.log_alpha.push_back(log_alpha[i]);
      layer.gate.push_back(values[i]);
      layer.keep.push_back(keep[i]);
    }
    s.layers.push_back(std::move(layer));
  }
  s.summary["expected_l0"] = g.expected_l0().item<double>();
  s.summary["expected_sparsity"] = measure.expected(g).item<double>();
  s.summary["mask_sparsity"] = measure.of_mask(keep);
  s.summary["sparsity_unit"] = gates::to_string(measure.unit);
  return s;
}

/// The state at the end of the gate phase. A head the target keeps while its deterministic
/// gate is 0 (training ended closing more gates than the target asks) would be dead weight at
/// 0: it is kept at gate 1 instead.
GateState final_gate_state(const gates::HardConcreteGates& g, const models::AttentionModel& model,
                           const ModelFingerprint& fingerprint, const gates::SparsityMeasure& measure,
                           const GateTrainingOptions& o) {
  auto state = snapshot_state(g, model, fingerprint, measure, o, o.steps, true);
  int64_t reopened = 0;
  for (auto& layer : state.layers)
    for (size_t h = 0; h < layer.heads.size(); ++h)
      if (layer.keep[h] && layer.gate[h] <= 0) {
        layer.gate[h] = 1.0;
        ++reopened;
      }
  if (reopened > 0)
    log::info("{} kept head(s) had a closed gate (training ended sparser than the target); they "
              "are kept at gate 1",
              reopened);
  state.summary["reopened_heads"] = reopened;
  return state;
}

/// Multipliers that make the gated model compute what the pruned model will: kept heads get
/// their deterministic gate value, removed heads 0.
models::HeadMultipliers final_multipliers(const GateState& s, const torch::Device& device) {
  models::HeadMultipliers m;
  for (const auto& layer : s.layers) {
    std::vector<float> v;
    for (size_t h = 0; h < layer.heads.size(); ++h)
      v.push_back(layer.keep[h] ? static_cast<float>(layer.gate[h]) : 0.f);
    m.push_back(torch::tensor(v).to(device));
  }
  return m;
}

}  // namespace

nlohmann::json GateTrainingOptions::to_json() const {
  return {{"steps", steps},
          {"batch_size", batch_size},
          {"learning_rate", learning_rate},
          {"lambda_learning_rate", lambda_learning_rate},
          {"target_sparsity", target_sparsity ? nlohmann::json(*target_sparsity) : nlohmann::json()},
          {"sparsity_unit", gates::to_string(unit)},
          {"flops_seq_len", flops_seq_len},
          {"l0_lambda", l0_lambda},
          {"warmup_steps", warmup_steps},
          {"beta", gate.beta},
          {"gamma", gate.gamma},
          {"zeta", gate.zeta},
          {"log_alpha_init", gate.log_alpha_init},
          {"rule", gates::to_string(rule)},
          {"min_heads_per_layer", constraints.min_heads_per_layer},
          {"gqa_mode", gates::to_string(constraints.group_rule)},
          {"embedding_weight", embedding_weight},
          {"train_weights", train_weights},
          {"finetune_steps", train_weights ? nlohmann::json(finetune_steps) : nlohmann::json()},
          {"weights_learning_rate", weights_learning_rate},
          {"seed", seed}};
}

GateState train_gates(models::Checkpoint& ckpt, const Corpus& corpus, const GateTrainingOptions& o) {
  auto& model = *ckpt.model;
  const auto& config = model.config();
  const auto measure = sparsity_measure(config, o.unit, o.flops_seq_len);
  if (o.target_sparsity)
    gates::validate_target(*o.target_sparsity, config.heads_per_layer(), measure,
                           constraints_for(config, o.constraints));
  if (o.steps < 1) throw Error("--steps must be at least 1");
  if (o.train_weights && o.finetune_steps < 1)
    throw Error("--train-weights needs --finetune-steps of at least 1");
  // Phase 1 (steps [0, steps)): the gates and the multipliers train, the weights are frozen.
  // Phase 2 (--train-weights, steps [steps, total)): the mask is fixed, the weights train.
  const int64_t total_steps = o.steps + (o.train_weights ? o.finetune_steps : 0);
  if (corpus.train.empty()) throw Error("the corpus has no training sequences");
  const int64_t warmup = o.warmup_steps >= 0 ? o.warmup_steps : (o.steps * 2) / 5;
  const auto fingerprint = fingerprint_of(model);

  // Teacher: the dense model, frozen. While the weights are frozen the student *is* the
  // teacher without gates; a separate copy only when they will train.
  std::shared_ptr<models::AttentionModel> teacher = ckpt.model;
  if (o.train_weights) teacher = models::load_checkpoint(ckpt.dir, o.device).model;
  for (auto& p : model.parameters()) p.set_requires_grad(false);
  for (auto& p : teacher->parameters()) p.set_requires_grad(false);

  auto g = std::make_shared<gates::HardConcreteGates>(config.heads_per_layer(), o.gate);
  auto lagrangian = std::make_shared<gates::Lagrangian>();
  g->to(o.device);
  lagrangian->to(o.device);
  torch::optim::AdamW gate_opt({g->log_alpha}, torch::optim::AdamWOptions(o.learning_rate).weight_decay(0));
  // Plain gradient ascent for the multipliers: their step is proportional to the gap ŝ − t, so
  // they settle as the gap closes (an Adam step has constant size and overshoots).
  torch::optim::SGD lambda_opt(lagrangian->parameters(), torch::optim::SGDOptions(o.lambda_learning_rate));
  std::unique_ptr<torch::optim::AdamW> weights_opt;
  if (o.train_weights)
    weights_opt = std::make_unique<torch::optim::AdamW>(
        model.parameters(), torch::optim::AdamWOptions(o.weights_learning_rate).weight_decay(0.01));

  std::filesystem::create_directories(o.out_dir);
  const auto snapshot_file = o.out_dir / kSnapshot;
  int64_t start = 0;
  if (o.resume) {
    if (!std::filesystem::exists(snapshot_file)) {
      if (std::filesystem::exists(o.out_dir / "gates.json") && GateState::load(o.out_dir).complete)
        throw Error(fmt::format("--resume: the run in {} already finished; its gates are in "
                                "gates.json (use another --out for a new run)",
                                o.out_dir.string()));
      throw Error(fmt::format("--resume: {} has no {} to continue from", o.out_dir.string(), kSnapshot));
    }
    const auto previous = GateState::load(o.out_dir);
    if (auto diff = previous.model.difference(fingerprint); !diff.empty())
      throw Error(fmt::format("--resume: the snapshot belongs to another model: {}", diff));
    // Continuing must reproduce the uninterrupted run: every setting must be the snapshot's.
    const auto now = o.to_json();
    for (const auto& [key, value] : previous.settings.items())
      if (!now.contains(key) || now.at(key) != value)
        throw Error(fmt::format("--resume: setting '{}' was {} when the run started, now {}; "
                                "resume with the same settings or start a new run",
                                key, value.dump(), now.contains(key) ? now.at(key).dump() : "unset"));
    torch::serialize::InputArchive archive;
    archive.load_from(snapshot_file.string(), o.device);
    torch::Tensor step_t;
    archive.read("step", step_t);
    start = step_t.item<int64_t>();
    torch::NoGradGuard no_grad;
    torch::Tensor t;
    archive.read("log_alpha", t);
    g->log_alpha.copy_(t);
    archive.read("lambda_1", t);
    lagrangian->lambda_1.copy_(t);
    archive.read("lambda_2", t);
    lagrangian->lambda_2.copy_(t);
    torch::serialize::InputArchive gate_archive, lambda_archive;
    archive.read("gate_optimizer", gate_archive);
    archive.read("lambda_optimizer", lambda_archive);
    gate_opt.load(gate_archive);
    lambda_opt.load(lambda_archive);
    if (weights_opt) {
      const auto weights_file = o.out_dir / GateState::kWeightsFile;
      if (!std::filesystem::exists(weights_file))
        throw Error(fmt::format("--resume --train-weights: {} is missing", weights_file.string()));
      models::load_weights(model, models::load_safetensors(weights_file), weights_file.string());
      torch::serialize::InputArchive weights_archive;
      archive.read("weights_optimizer", weights_archive);
      weights_opt->load(weights_archive);
    }
    log::info("resuming at step {} of {}", start, total_steps);
  }
  auto save_snapshot = [&](int64_t step) {
    snapshot_state(*g, model, fingerprint, measure, o, step, false).save(o.out_dir);
    torch::serialize::OutputArchive archive, gate_archive, lambda_archive;
    archive.write("step", torch::tensor(step));
    archive.write("log_alpha", g->log_alpha.detach());
    archive.write("lambda_1", lagrangian->lambda_1.detach());
    archive.write("lambda_2", lagrangian->lambda_2.detach());
    gate_opt.save(gate_archive);
    lambda_opt.save(lambda_archive);
    archive.write("gate_optimizer", gate_archive);
    archive.write("lambda_optimizer", lambda_archive);
    if (weights_opt) {
      save_weights(model, o.out_dir);
      torch::serialize::OutputArchive weights_archive;
      weights_opt->save(weights_archive);
      archive.write("weights_optimizer", weights_archive);
    }
    const auto tmp = o.out_dir / (std::string(kSnapshot) + ".tmp");
    archive.save_to(tmp.string());
    std::filesystem::rename(tmp, snapshot_file);
  };

  BatchStream stream(corpus.train, o.batch_size, corpus.pad_id, o.seed);
  stream.skip(start);
  std::ofstream train_log(o.out_dir / "train_log.jsonl", o.resume ? std::ios::app : std::ios::trunc);
  log::info("training gates: {} heads in {} layers, {} steps, batch {}, {} training / {} held-out "
            "sequences, {}",
            g->total_heads(), config.num_hidden_layers, o.steps, o.batch_size, corpus.train.size(),
            corpus.heldout.size(),
            o.target_sparsity ? fmt::format("target sparsity {} ({}) by Lagrangian, warm-up {} steps",
                                            *o.target_sparsity, gates::to_string(o.unit), warmup)
                              : fmt::format("fixed L0 penalty lambda {}", o.l0_lambda));

  // Teacher outputs per bucket (valid only while the teacher is frozen).
  std::unordered_map<std::size_t, torch::Tensor> teacher_cache;
  int64_t cache_bytes = 0;
  const bool use_cache = o.teacher_cache_mib > 0;  // the teacher never changes
  const auto t0 = std::chrono::steady_clock::now();
  double tokens = 0;
  DistillationLoss last;
  // The gates' final state; in phase 2 the multipliers it fixes.
  GateState final_state;
  models::HeadMultipliers fixed;
  auto end_gate_phase = [&] {
    final_state = final_gate_state(*g, model, fingerprint, measure, o);
    fixed = final_multipliers(final_state, o.device);
    if (o.train_weights) {
      for (auto& p : model.parameters()) p.set_requires_grad(true);
      log::info("gates fixed ({} of {} heads kept); fine-tuning the weights for {} steps, lr {}",
                final_state.heads_kept(), final_state.heads_total(), o.finetune_steps,
                o.weights_learning_rate);
    }
  };
  for (int64_t step = start; step < total_steps; ++step) {
    const bool gate_phase = step < o.steps;
    if (!gate_phase && fixed.empty()) end_gate_phase();
    torch::manual_seed(o.seed + static_cast<uint64_t>(step) * 7919ULL);  // noise: resumable
    auto in = stream.next(o.device);
    torch::Tensor teacher_target;
    if (auto hit = teacher_cache.find(stream.last_bucket()); use_cache && hit != teacher_cache.end()) {
      teacher_target = hit->second;
    } else {
      torch::NoGradGuard no_grad;
      teacher_target = distillation_target(teacher->forward(in, nullptr));
      const auto bytes = static_cast<int64_t>(teacher_target.numel() * teacher_target.element_size());
      if (use_cache && cache_bytes + bytes <= o.teacher_cache_mib * (int64_t{1} << 20)) {
        teacher_cache.emplace(stream.last_bucket(), teacher_target);
        cache_bytes += bytes;
      }
    }
    auto multipliers = gate_phase ? g->split(g->sample()) : fixed;
    last = distillation(model.forward(in, &multipliers), teacher_target, in.attention_mask,
                        ckpt.pooling, o.embedding_weight);
    const double target = o.target_sparsity ? gates::ramped_target(*o.target_sparsity, step, warmup) : 0;
    auto expected_sparsity = measure.expected(*g);
    auto reg = !gate_phase         ? torch::zeros({}, expected_sparsity.options())
               : o.target_sparsity ? lagrangian->penalty(expected_sparsity, target)
                                   : gates::fixed_l0_penalty(*g, o.l0_lambda);
    auto total = last.total + reg;
    const double total_value = total.item<double>();
    if (!std::isfinite(total_value))
      throw Error(fmt::format("the loss became {} at step {} (distillation {}, regulariser {}); "
                              "lower --lr or check the corpus",
                              total_value, step, last.total.item<double>(), reg.item<double>()));
    gate_opt.zero_grad();
    lambda_opt.zero_grad();
    if (weights_opt) weights_opt->zero_grad();
    total.backward();
    if (gate_phase) {
      lagrangian->flip_gradients();
      gate_opt.step();
      if (o.target_sparsity) lambda_opt.step();
    } else {
      weights_opt->step();
    }
    tokens += in.attention_mask.sum().item<double>();

    const int64_t done = step + 1;
    if (done % o.log_every == 0 || done == o.steps || done == total_steps) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double rate = tokens / std::max(seconds, 1e-9);
      const double eta = seconds / static_cast<double>(done - start) * static_cast<double>(total_steps - done);
      const double l0 = g->expected_l0().item<double>();
      if (!gate_phase)
        log::info("step {:>5}/{} | fine-tuning weights, mask fixed | loss {:.5f} ({}) | {:.0f} "
                  "tok/s | ETA {}",
                  done, total_steps, total_value, last.describe(), rate, human_duration(eta));
      else
        log::info("step {:>5}/{} | loss {:.5f} ({}, reg {:+.5f}) | E[L0] {:.1f}/{} | target "
                  "{:.3f} s^ {:.3f} | lambda {:.3f} {:.3f} | {:.0f} tok/s | ETA {}",
                done, total_steps, total_value, last.describe(), reg.item<double>(), l0, g->total_heads(), target,
                expected_sparsity.item<double>(), lagrangian->lambda_1.item<double>(),
                lagrangian->lambda_2.item<double>(), rate, human_duration(eta));
      auto record = nlohmann::json{{"step", done},
                                  {"phase", gate_phase ? "gates" : "weights"},
                                  {"loss", total_value},
                                  {"regularizer", reg.item<double>()},
                                  {"expected_l0", l0},
                                  {"expected_sparsity", expected_sparsity.item<double>()},
                                  {"target", target},
                                  {"lambda_1", lagrangian->lambda_1.item<double>()},
                                  {"lambda_2", lagrangian->lambda_2.item<double>()},
                                  {"tokens_per_second", rate},
                                  {"seconds", seconds}};
      record.update(last.parts());
      train_log << record.dump()
                << "\n";
      train_log.flush();
    }
    if (o.save_every > 0 && done % o.save_every == 0 && done < total_steps) save_snapshot(done);
    if (o.stop_after > 0 && done - start >= o.stop_after && done < total_steps) {
      save_snapshot(done);
      log::info("stopped after {} steps as asked; continue with --resume", done - start);
      return GateState::load(o.out_dir);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (fixed.empty()) end_gate_phase();
  auto state = final_state;
  state.step = total_steps;
  if (o.train_weights) {
    save_weights(model, o.out_dir);
    state.trained_model = fingerprint_of(model);
  }
  const auto fidelity = measure_fidelity(model, &fixed, *teacher, corpus.heldout,
                                         corpus.pad_id, ckpt.pooling, o.batch_size, o.device);
  state.summary["heldout_fidelity"] = fidelity.to_json();
  state.summary["train_seconds"] = seconds;
  state.summary["tokens_per_second"] = tokens / std::max(seconds, 1e-9);
  state.summary["final_loss"] = last.parts();
  state.save(o.out_dir);
  std::error_code ec;
  std::filesystem::remove(snapshot_file, ec);
  for (auto& p : model.parameters()) p.set_requires_grad(false);
  log::info("gates trained in {}: {} of {} heads kept; fidelity to the dense model on {}",
            human_duration(seconds), state.heads_kept(), state.heads_total(), fidelity.describe());
  return state;
}

}  // namespace headprune::pruner
