// The header of a GGUF file (llama.cpp's model format): metadata key/values and tensor infos,
// parsed and checked with no tensor library involved, so that it can be fuzzed on its own
// (tests/fuzz).
//
// Format spec: ggml's docs/gguf.md (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md),
// versions 2 and 3, little-endian:
//   "GGUF"  u32 version  u64 tensor_count  u64 metadata_kv_count
//   metadata_kv_count × { string key, u32 value_type, value }
//   tensor_count × { string name, u32 n_dimensions, u64 dimensions[n], u32 ggml_type, u64 offset }
//   padding to `general.alignment` (default 32), then the data section; each tensor's offset is
//   relative to the data section and a multiple of the alignment.
//   string = u64 length + UTF-8 bytes (no terminator); array = u32 element type, u64 count, elements.
// dimensions[0] is the fastest-varying one: a torch tensor of the same data has the reversed
// shape (a [rows, cols] weight is stored as dimensions {cols, rows}).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/formats/gguf_quants.h"

namespace headprune::models {

/// GGUF metadata value types (gguf.md, "gguf_metadata_value_type").
enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12
};

/// One metadata value: its GGUF type (and element type for arrays) and the value as JSON
/// (numbers, bools, strings, arrays of those).
struct GgufValue {
  GgufValueType type = GgufValueType::UINT32;
  GgufValueType array_type = GgufValueType::UINT32;  ///< meaningful when type == ARRAY
  nlohmann::json value;
};

/// One tensor info, checked: the shape holds whole blocks of its type and the bytes lie in the
/// data section without overlapping another tensor or leaving bytes between tensors unclaimed.
struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dimensions;  ///< GGUF order: dimensions[0] varies fastest
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;   ///< from the start of the data section
  uint64_t n_bytes = 0;  ///< elements / block_size × type_size
  /// The torch shape of the same data: dimensions reversed.
  std::vector<int64_t> torch_shape() const { return {dimensions.rbegin(), dimensions.rend()}; }
  int64_t element_count() const;
};

/// A parsed, checked GGUF header.
struct GgufHeader {
  uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;  ///< in file order
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  ///< byte offset of the data section in the file

  /// The metadata value of `key`, or nullptr.
  const GgufValue* find(const std::string& key) const;
};

/// Parses the header of a GGUF file of `file_size` bytes, of which `data` holds the first
/// `size`. Rules enforced: magic "GGUF"; version 2 or 3; every string and array inside the
/// bytes (lengths checked before any allocation); known value types, no nested arrays deeper
/// than the spec's one level of array-of-array; no key or tensor name repeated; at most 4
/// dimensions, each >= 1; a known ggml type whose block size divides dimensions[0];
/// `general.alignment` a u32 power of two; each offset a multiple of it; every tensor inside
/// the file and none overlapping; and the tensors tiling the data section as every writer lays
/// it out (ggml's gguf.cpp, gguf-py, GgufWriter): sorted by offset, the first at offset 0,
/// less than the alignment of padding between one tensor's end and the next one's offset, and
/// at most alignment - 1 bytes after the last tensor to the end of the file (0 to alignment - 1:
/// gguf-py pads the last tensor, GgufWriter does not). Bytes that no tensor claims mean the
/// tensor-info table disagrees with the data (an info removed or the tensor count decremented
/// shifts the data section); a header with no tensors may be followed by at most alignment - 1
/// bytes. `file` names the file in messages.
/// @throws GgufNeedMoreBytes when the header runs past `size` but `size` < `file_size` (the
///         caller reads more and retries); headprune::Error "GGUF file 'F'[, tensor 'T']: what
///         is wrong" otherwise.
GgufHeader parse_gguf_header(const char* data, std::size_t size, uint64_t file_size,
                             const std::filesystem::path& file);

/// Thrown by parse_gguf_header when its buffer ended before the header did.
struct GgufNeedMoreBytes {};

/// The message convention of the GGUF reader.
[[noreturn]] void gguf_error(const std::filesystem::path& file, const std::string& msg);

}  // namespace headprune::models
