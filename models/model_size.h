// How large a model is: its parameters in memory and its weight files on disk.
#pragma once

#include <cstdint>
#include <filesystem>

#include "models/attention_model.h"

namespace headprune::models {

/// Number of parameters (every tensor registered as a parameter, whatever its dtype) of a model.
int64_t parameter_count(const AttentionModel& model);

/// Size in bytes of a checkpoint's weights on disk: every `*.safetensors` file directly in the
/// folder `dir` (model.safetensors or its shards), or the file itself when `dir` is a single-file
/// checkpoint (llama2.c .bin, GGUF). @throws std::filesystem::filesystem_error if `dir` cannot be read.
std::uintmax_t weights_file_bytes(const std::filesystem::path& dir);

}  // namespace headprune::models
