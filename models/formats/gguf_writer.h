// Writing a GGUF v3 file (llama.cpp's model format): ordered metadata and tensors taken from
// LibTorch, stored as F32, F16 or Q8_0. The inverse of gguf.h's reader.
//
// Format spec: ggml's docs/gguf.md (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md),
// version 3, little-endian, alignment 32 (no `general.alignment` key is written):
//   "GGUF"  u32 3  u64 tensor_count  u64 metadata_kv_count
//   metadata in insertion order, tensor infos in insertion order (dimensions reversed from the
//   torch shape: a [rows, cols] weight is stored as {cols, rows}), zero padding to 32, then each
//   tensor's bytes, each starting at a multiple of 32 from the data section's start.
// Q8_0 is ggml's quantize_row_q8_0_ref (ggml-quants.c): per block of 32 values
// d = max|x| / 127, q = roundf(x * (d ? 1/d : 0)) as int8, d stored as f16 (block_q8_0: 2 + 32
// bytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/formats/gguf_header.h"

namespace headprune::models {

/// Metadata value builders (GgufValue with the type llama.cpp's gguf-py writes for each).
GgufValue gguf_string(const std::string& value);
GgufValue gguf_u32(uint32_t value);
GgufValue gguf_f32(float value);
GgufValue gguf_bool(bool value);
GgufValue gguf_string_array(const std::vector<std::string>& values);
GgufValue gguf_i32_array(const std::vector<int64_t>& values);
GgufValue gguf_f32_array(const std::vector<float>& values);

/// Q8_0 bytes of `values` (a multiple of 32 float32 values), as quantize_row_q8_0_ref.
/// @throws headprune::Error if the count is not a multiple of 32.
std::string quantize_q8_0(const float* values, int64_t count);

/// A GGUF file being assembled: metadata and tensors in the order they are added.
class GgufWriter {
 public:
  /// Adds metadata `key`. Arrays (type ARRAY) hold scalars or strings of `array_type`.
  /// @throws headprune::Error on a repeated key or a value whose JSON does not fit its type.
  void add(const std::string& key, GgufValue value);
  /// Adds tensor `name` ([rows, cols] torch layout, 1 to 4 dimensions, any float dtype, any
  /// device) to be stored as `type` (F32, F16 or Q8_0; Q8_0 needs the last torch dimension to
  /// be a multiple of 32). The data is converted when written.
  /// @throws headprune::Error on a repeated name, another type, or a shape Q8_0 cannot hold.
  void add_tensor(const std::string& name, const torch::Tensor& data, GgmlType type);

  /// Writes the whole file to `out`. @throws headprune::Error when the stream fails.
  void write(std::ostream& out) const;
  /// The whole file as bytes (for writers that need the content, e.g. a folder build).
  std::string bytes() const;
  /// Writes the whole file to `file` atomically: a temporary file beside it, then a rename.
  /// @throws headprune::Error naming the file on an I/O failure (the target untouched then).
  void write_file(const std::filesystem::path& file) const;

 private:
  struct Tensor {
    std::string name;
    torch::Tensor data;  ///< CPU, contiguous, float32
    GgmlType type;
    uint64_t n_bytes;
  };
  /// key -> its value as the file holds it (value type, then the value; arrays: element type,
  /// count, elements)
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace headprune::models
