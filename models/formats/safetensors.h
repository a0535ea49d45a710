// Reading and writing the safetensors format.
//
// Format spec: https://github.com/huggingface/safetensors (README, "Format"):
//   8 bytes  little-endian u64 N = header length
//   N bytes  UTF-8 JSON: {"__metadata__": {str: str}?, NAME: {"dtype": D, "shape": [..],
//            "data_offsets": [BEGIN, END]}, ...}; offsets are relative to the byte after the header
//   rest     the tensor bytes, little-endian, row-major
// Sharded checkpoints use `model.safetensors.index.json` ({"weight_map": {NAME: FILE}}).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/formats/safetensors_header.h"

namespace headprune::models {

/// Ordered name -> tensor map (sorted by name, as the format's writers do).
using TensorMap = std::map<std::string, torch::Tensor>;

/// Reads every tensor of one `.safetensors` file into CPU tensors of the stored dtype.
/// Supported dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
/// Checks: file at least 8 bytes, header length within the file, header is a JSON object,
/// each entry has a known dtype, a shape of non-negative ints and data_offsets in bounds,
/// shape x itemsize == END - BEGIN, no two tensors overlap.
/// @throws headprune::Error naming the file (and the tensor) on any violation or I/O failure.
TensorMap load_safetensors(const std::filesystem::path& file,
                           std::map<std::string, std::string>* metadata = nullptr);

/// The header of one `.safetensors` file, checked as load_safetensors checks it, without reading
/// any tensor's bytes. @throws headprune::Error as load_safetensors does.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& file);

/// The safetensors files of a checkpoint folder: `model.safetensors`, or the shards that
/// `model.safetensors.index.json` lists. @throws headprune::Error if neither exists or the index is malformed.
std::vector<std::filesystem::path> checkpoint_weight_files(const std::filesystem::path& dir);

/// Loads the weights of a checkpoint folder: `model.safetensors`, or every shard listed in
/// `model.safetensors.index.json` (each shard's tensors must be exactly the ones the index
/// names for it).
/// @throws headprune::Error if neither file exists, or on any shard error.
TensorMap load_checkpoint_weights(const std::filesystem::path& dir);

/// Writes tensors (any device, any supported dtype; made contiguous on CPU) to `file`, with
/// optional `__metadata__`. The header is padded with spaces to a multiple of 8 bytes.
/// Writes to `file` directly; callers wanting atomicity write into a temporary folder.
/// @throws headprune::Error on an unsupported dtype or an I/O failure.
void save_safetensors(const std::filesystem::path& file, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace headprune::models
