// Running a checkpoint over a list of texts in length-sorted batches.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// What to keep of one batch: (inputs [B, T], last_hidden_state [B, T, H]) -> [B, width].
using BatchHead = std::function<torch::Tensor(const models::ModelInputs&, const torch::Tensor&)>;

/// Tokenizes `texts` with the checkpoint's tokenizer (truncated to its max_seq_length),
/// runs the model without gradient in batches of `batch_size` texts of similar length, and
/// applies `head` to each batch. Returns [texts, width] on CPU, rows in the order of `texts`.
/// @throws headprune::Error if the checkpoint has no tokenizer.
torch::Tensor run_texts(models::Checkpoint& checkpoint, const std::vector<std::string>& texts,
                        std::size_t batch_size, const torch::Device& device, int64_t width,
                        const BatchHead& head);

}  // namespace headprune::pruner
