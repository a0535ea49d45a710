#include "pruner/training/training_run.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "models/model_size.h"
#include "pruner/atomic_write.h"
#include "pruner/training/gate_training.h"
#include "pruner/training/gate_units.h"

namespace headprune::pruner {
namespace fs = std::filesystem;
namespace {

/// The teacher, with every parameter of it and of the student frozen. With --train-weights the
/// teacher is a second copy (`teacher`, or one copied here), its matrices in the file's dtype, and
/// the student's weights are widened to float32 for training (WeightStorage).
std::shared_ptr<models::AttentionModel> frozen_teacher(models::Checkpoint& ckpt, const GateTrainingOptions& o,
                                                       std::shared_ptr<models::AttentionModel> teacher) {
  if (!o.train_weights) {
    teacher = ckpt.model;
  } else {
    if (!teacher) teacher = models::copy_checkpoint(ckpt).model;
    models::widen_narrow_weights(*ckpt.model);
  }
  for (auto& p : ckpt.model->parameters()) p.set_requires_grad(false);
  for (auto& p : teacher->parameters()) p.set_requires_grad(false);
  return teacher;
}

std::shared_ptr<gates::HardConcreteGates> make_gates(const models::AttentionModel& model,
                                                     const GateTrainingOptions& o) {
  auto g = std::make_shared<gates::HardConcreteGates>(gate_units(model.config(), o).per_group(), o.gate);
  g->to(o.device);
  return g;
}

std::shared_ptr<gates::Lagrangian> make_lagrangian(const GateTrainingOptions& o) {
  auto lagrangian = std::make_shared<gates::Lagrangian>(o.lambda_damping);
  lagrangian->to(o.device);
  return lagrangian;
}

/// Refuses a --resume whose snapshot is absent, finished, or from another model or settings.
void check_resumable(const GateTrainingOptions& o, const ModelFingerprint& fingerprint) {
  if (!fs::exists(o.out_dir / kSnapshotFile)) {
    if (fs::exists(o.out_dir / "gates.json") && GateState::load(o.out_dir).complete)
      throw Error(fmt::format("--resume: the run in {} already finished; its gates are in "
                              "gates.json (use another --out for a new run)",
                              o.out_dir.string()));
    throw Error(fmt::format("--resume: {} has no {} to continue from", o.out_dir.string(), kSnapshotFile));
  }
  const auto previous = GateState::load(o.out_dir);
  if (auto diff = previous.model.difference(fingerprint); !diff.empty())
    throw Error(fmt::format("--resume: the snapshot belongs to another model: {}", diff));
  if (auto diff = o.resume_difference(previous.settings); !diff.empty())
    throw Error(fmt::format("--resume: {}; resume with the same settings or start a new run", diff));
}

void read_tensor(torch::serialize::InputArchive& archive, const char* key, torch::Tensor& into) {
  torch::Tensor t;
  archive.read(key, t);
  into.copy_(t);
}

void restore_weights(TrainingRun& run, torch::serialize::InputArchive& archive, const fs::path& dir) {
  const auto weights_file = dir / GateState::kWeightsFile;
  if (!fs::exists(weights_file))
    throw Error(fmt::format("--resume --train-weights: {} is missing", weights_file.string()));
  models::load_weights(run.model, models::load_safetensors(weights_file), weights_file.string());
  torch::serialize::InputArchive weights_archive;
  archive.read("weights_optimizer", weights_archive);
  run.weights_optimizer->load(weights_archive);
}

}  // namespace

TrainingRun::TrainingRun(models::Checkpoint& ckpt, const GateTrainingOptions& o,
                         std::shared_ptr<models::AttentionModel> dense)
    : model(*ckpt.model),
      teacher(frozen_teacher(ckpt, o, std::move(dense))),
      gates(make_gates(model, o)),
      lagrangian(make_lagrangian(o)),
      gate_optimizer({gates->log_alpha}, torch::optim::AdamWOptions(o.learning_rate).weight_decay(0)),
      lambda_optimizer(lagrangian->parameters(), torch::optim::SGDOptions(o.lambda_learning_rate)) {
  model.set_checkpoint_layers(GateTrainingOptions::checkpoints(o.checkpoint_layers, models::parameter_count(model)));
  if (o.train_weights)
    weights_optimizer = std::make_unique<torch::optim::AdamW>(
        model.parameters(), torch::optim::AdamWOptions(o.weights_learning_rate).weight_decay(0.01));
}

void save_weights(const models::AttentionModel& model, const fs::path& dir) {
  write_through(dir / GateState::kWeightsFile,
                [&](const fs::path& tmp) { models::save_safetensors(tmp, models::state_dict(model)); },
                dir / (std::string(GateState::kWeightsFile) + ".tmp"));
}

void save_snapshot(TrainingRun& run, const fs::path& dir, int64_t step, int64_t gate_steps) {
  torch::serialize::OutputArchive archive, gate_archive, lambda_archive;
  archive.write("step", torch::tensor(step));
  archive.write("gate_steps", torch::tensor(gate_steps));
  archive.write("log_alpha", run.gates->log_alpha.detach());
  archive.write("lambda_1", run.lagrangian->lambda_1.detach());
  archive.write("lambda_2", run.lagrangian->lambda_2.detach());
  run.gate_optimizer.save(gate_archive);
  run.lambda_optimizer.save(lambda_archive);
  archive.write("gate_optimizer", gate_archive);
  archive.write("lambda_optimizer", lambda_archive);
  if (run.weights_optimizer) {
    save_weights(run.model, dir);
    torch::serialize::OutputArchive weights_archive;
    run.weights_optimizer->save(weights_archive);
    archive.write("weights_optimizer", weights_archive);
  }
  write_through(dir / kSnapshotFile, [&](const fs::path& tmp) { archive.save_to(tmp.string()); },
                dir / (std::string(kSnapshotFile) + ".tmp"));
}

ResumePoint resume_from_snapshot(TrainingRun& run, const GateTrainingOptions& o,
                                 const ModelFingerprint& fingerprint) {
  check_resumable(o, fingerprint);
  torch::serialize::InputArchive archive;
  archive.load_from((o.out_dir / kSnapshotFile).string(), o.device);
  torch::Tensor step, gate_steps;
  archive.read("step", step);
  const bool extended = archive.try_read("gate_steps", gate_steps);
  torch::NoGradGuard no_grad;
  read_tensor(archive, "log_alpha", run.gates->log_alpha);
  read_tensor(archive, "lambda_1", run.lagrangian->lambda_1);
  read_tensor(archive, "lambda_2", run.lagrangian->lambda_2);
  torch::serialize::InputArchive gate_archive, lambda_archive;
  archive.read("gate_optimizer", gate_archive);
  archive.read("lambda_optimizer", lambda_archive);
  run.gate_optimizer.load(gate_archive);
  run.lambda_optimizer.load(lambda_archive);
  if (run.weights_optimizer) restore_weights(run, archive, o.out_dir);
  return {step.item<int64_t>(), extended ? gate_steps.item<int64_t>() : o.steps};
}

}  // namespace headprune::pruner
