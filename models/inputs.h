// Turning tokenizer output into model inputs.
#pragma once

#include <torch/types.h>

#include "models/attention_model.h"
#include "models/tokenizer/wordpiece.h"

namespace headprune::models {

/// Copies an encoded batch into int64 tensors of shape [batch, seq] on `device`.
ModelInputs to_model_inputs(const EncodedBatch& batch, const torch::Device& device);

}  // namespace headprune::models
