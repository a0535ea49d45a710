// Gate state that needs a model: fingerprints of loaded models and fine-tuned weights.
#pragma once

#include <filesystem>

#include "models/attention_model.h"
#include "models/checkpoint.h"
#include "pruner/records/gate_record.h"

namespace headprune::pruner {

/// The fingerprint of `model`: its config's identity and Σ|w| over all parameters (double).
ModelFingerprint fingerprint_of(const models::AttentionModel& model);

/// With fine-tuned weights in the gates folder `dir` (trained_model set): checks that
/// `checkpoint` is the model the run started from, then loads `<dir>/weights.safetensors` into
/// it, so that it becomes the model the gates belong to. Does nothing for gates-only runs.
/// @throws headprune::Error if the checkpoint is another model, the weights file is missing or
///         malformed, or the loaded weights do not match the recorded fingerprint.
void load_trained_weights(const GateState& gates, const std::filesystem::path& dir,
                          models::Checkpoint& checkpoint);

}  // namespace headprune::pruner
