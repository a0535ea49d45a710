// The safetensors header: parsed and checked against every rule of the format's own
// specification (huggingface/safetensors README, "Format"), with no tensor library involved,
// so that it can be fuzzed on its own (tests/fuzz).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace headprune::models {

/// A dtype a safetensors file may hold here, by its format name ("F32") and element size.
struct SafetensorsDtype {
  const char* name;
  std::size_t itemsize;
};

/// The header key of the string -> string metadata object.
inline constexpr const char* kSafetensorsMetadataKey = "__metadata__";

/// The supported dtype names, for messages.
inline constexpr const char* kSafetensorsDtypes = "F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL";

/// One header entry, checked: shape × itemsize == end − begin.
struct SafetensorsEntry {
  std::string name;
  const SafetensorsDtype* dtype = nullptr;
  std::vector<int64_t> shape;
  std::uint64_t begin = 0, end = 0;  ///< byte offsets into the data section
};

/// A checked header: `__metadata__` and the entries sorted by data offset.
struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> entries;
};

/// Parses the header text of a safetensors file whose data section has `data_size` bytes.
/// The format's rules enforced: the text starts with '{' (trailing spaces allowed); it is a
/// JSON object with no key repeated in any object; `__metadata__` maps strings to strings;
/// every other key is a tensor {"dtype", "shape", "data_offsets"} with a supported dtype,
/// non-negative integer dimensions and offsets, BEGIN <= END and shape × itemsize == END −
/// BEGIN; tensors lie inside the data section, do not overlap, and index it entirely (no holes,
/// nothing after the last one). `file` names the file in messages.
/// @throws headprune::Error "safetensors file 'F'[, tensor 'T']: what is wrong: what to do".
SafetensorsHeader parse_safetensors_header(const std::filesystem::path& file,
                                           const std::string& header_text, std::uint64_t data_size);

/// The message conventions of the safetensors reader, shared by its two halves.
[[noreturn]] void safetensors_error(const std::filesystem::path& file, const std::string& msg);
[[noreturn]] void safetensors_error(const std::filesystem::path& file, const std::string& tensor,
                                    const std::string& msg);
inline constexpr const char* kSafetensorsTruncatedHint =
    "the file is truncated: re-download or re-export it";
inline constexpr const char* kSafetensorsCorruptHint =
    "the header is corrupt: re-download the file or re-export it with a safetensors writer";

}  // namespace headprune::models
