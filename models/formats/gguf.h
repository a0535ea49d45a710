// Reading tensors from a GGUF file (llama.cpp's model format) into LibTorch.
//
// The header (metadata, tensor infos) is parsed and checked by gguf_header.h; quantised blocks
// are dequantised by gguf_quants.h. Format spec: ggml's docs/gguf.md.
#pragma once

#include <filesystem>
#include <string>

#include <torch/types.h>

#include "models/formats/gguf_header.h"

namespace headprune::models {

/// An open GGUF file: its path and checked header.
struct GgufFile {
  std::filesystem::path path;
  uint64_t file_size = 0;
  GgufHeader header;
};

/// Reads and checks the header of `file` (gguf_header.h's rules), reading as much of the file
/// as the header needs.
/// @throws headprune::Error "GGUF file 'F': ..." on a missing/unreadable file or any format violation.
GgufFile read_gguf(const std::filesystem::path& file);

/// The data of tensor `info` of `gguf` as a CPU tensor with the torch shape (dimensions
/// reversed): F32 as float32, F16 as float16 and BF16 as bfloat16 (unchanged), every quantised
/// type dequantised to float32 (gguf_quants.h).
/// @throws headprune::Error naming the file and tensor on a type that cannot be dequantised or
///         an I/O failure.
torch::Tensor read_gguf_tensor(const GgufFile& gguf, const GgufTensorInfo& info);

}  // namespace headprune::models
