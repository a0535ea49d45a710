#include "models/formats/gguf_header.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

constexpr uint32_t kMaxDimensions = 4;  // GGML_MAX_DIMS

/// Bounded little-endian reads over the header bytes.
class Cursor {
 public:
  Cursor(const char* data, std::size_t size, uint64_t file_size, const std::filesystem::path& file)
      : data_(data), size_(size), file_size_(std::max<uint64_t>(file_size, size)), file_(file) {}

  std::size_t position() const { return pos_; }

  /// Makes sure `n` more bytes are in the buffer.
  void need(uint64_t n, const char* what) {
    if (n <= size_ - pos_) return;
    if (size_ < file_size_ && n <= file_size_ - pos_) throw GgufNeedMoreBytes{};
    gguf_error(file_, fmt::format("{} at byte {} runs past the end of the file ({} bytes): the file is "
                                  "truncated or corrupt; re-download it",
                                  what, pos_, file_size_));
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const auto n = read<uint64_t>(what);
    need(n, what);
    std::string s(data_ + pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  /// Refuses a count of elements of at least `min_size` bytes each that cannot fit in the file.
  void check_count(uint64_t count, uint64_t min_size, const std::string& what) {
    if (min_size > 0 && count > (file_size_ - std::min<uint64_t>(pos_, file_size_)) / min_size)
      gguf_error(file_, fmt::format("{} claims {} elements, more than the file's {} bytes can hold: the "
                                    "file is truncated or corrupt",
                                    what, count, file_size_));
  }

 private:
  const char* data_;
  std::size_t size_;
  uint64_t file_size_;
  const std::filesystem::path& file_;
  std::size_t pos_ = 0;
};

/// The smallest encoded size of one value of `type` (strings: their 8-byte length).
uint64_t min_value_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
    default: return 8;  // STRING (length), ARRAY (type + count > 8), 64-bit numbers
  }
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::FLOAT64); }

nlohmann::json read_scalar(Cursor& in, GgufValueType type, const std::string& key,
                           const std::filesystem::path& file) {
  const auto what = "metadata '" + key + "'";
  switch (type) {
    case GgufValueType::UINT8: return in.read<uint8_t>(what.c_str());
    case GgufValueType::INT8: return in.read<int8_t>(what.c_str());
    case GgufValueType::UINT16: return in.read<uint16_t>(what.c_str());
    case GgufValueType::INT16: return in.read<int16_t>(what.c_str());
    case GgufValueType::UINT32: return in.read<uint32_t>(what.c_str());
    case GgufValueType::INT32: return in.read<int32_t>(what.c_str());
    case GgufValueType::FLOAT32: return in.read<float>(what.c_str());
    case GgufValueType::UINT64: return in.read<uint64_t>(what.c_str());
    case GgufValueType::INT64: return in.read<int64_t>(what.c_str());
    case GgufValueType::FLOAT64: return in.read<double>(what.c_str());
    case GgufValueType::STRING: return in.string(what.c_str());
    case GgufValueType::BOOL: {
      const auto b = in.read<uint8_t>(what.c_str());
      if (b > 1) gguf_error(file, fmt::format("metadata '{}': bool value {} is neither 0 nor 1", key, b));
      return b == 1;
    }
    default: break;
  }
  gguf_error(file, fmt::format("metadata '{}': unexpected value type {}", key, static_cast<uint32_t>(type)));
}

GgufValue read_value(Cursor& in, const std::string& key, const std::filesystem::path& file) {
  GgufValue v;
  const auto type = in.read<uint32_t>("metadata value type");
  if (!known_value_type(type))
    gguf_error(file, fmt::format("metadata '{}': unknown value type {} (known: 0-12)", key, type));
  v.type = static_cast<GgufValueType>(type);
  if (v.type != GgufValueType::ARRAY) {
    v.value = read_scalar(in, v.type, key, file);
    return v;
  }
  const auto element = in.read<uint32_t>("array element type");
  if (!known_value_type(element) || element == static_cast<uint32_t>(GgufValueType::ARRAY))
    gguf_error(file, fmt::format("metadata '{}': array element type {} is not supported (nested arrays "
                                 "are not read)", key, element));
  v.array_type = static_cast<GgufValueType>(element);
  const auto count = in.read<uint64_t>("array length");
  in.check_count(count, min_value_size(v.array_type), "metadata '" + key + "'");
  v.value = nlohmann::json::array();
  for (uint64_t i = 0; i < count; ++i) v.value.push_back(read_scalar(in, v.array_type, key, file));
  return v;
}

uint64_t read_alignment(const GgufHeader& h, const std::filesystem::path& file) {
  const auto* a = h.find("general.alignment");
  if (!a) return 32;
  if (a->type != GgufValueType::UINT32)
    gguf_error(file, "metadata 'general.alignment' must be a uint32");
  const auto value = a->value.get<uint64_t>();
  if (value == 0 || (value & (value - 1)) != 0)
    gguf_error(file, fmt::format("general.alignment {} is not a power of two", value));
  return value;
}

GgufTensorInfo read_tensor_info(Cursor& in, const std::filesystem::path& file) {
  GgufTensorInfo t;
  t.name = in.string("tensor name");
  const auto fail = [&](const std::string& msg) { gguf_error(file, fmt::format("tensor '{}': {}", t.name, msg)); };
  const auto n_dims = in.read<uint32_t>("tensor dimension count");
  if (n_dims == 0 || n_dims > kMaxDimensions)
    fail(fmt::format("{} dimensions (1 to {} allowed)", n_dims, kMaxDimensions));
  uint64_t elements = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    const auto d = in.read<uint64_t>("tensor dimension");
    if (d == 0 || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
      fail(fmt::format("dimension {} is {} (must be >= 1, and the element count must fit in int64)", i, d));
    elements *= d;
    t.dimensions.push_back(static_cast<int64_t>(d));
  }
  const auto type = in.read<uint32_t>("tensor type");
  const auto traits = ggml_type_traits(type);
  if (!traits) fail(fmt::format("unknown ggml type {} (a newer llama.cpp format?)", type));
  t.type = traits->type;
  if (t.dimensions[0] % traits->block_size != 0)
    fail(fmt::format("first dimension {} is not a multiple of {}'s block size {}", t.dimensions[0],
                     traits->name, traits->block_size));
  t.n_bytes = elements / static_cast<uint64_t>(traits->block_size) * static_cast<uint64_t>(traits->type_size);
  t.offset = in.read<uint64_t>("tensor offset");
  return t;
}

/// Offsets aligned, every tensor inside the file, no two overlapping, and the tensors tiling the
/// data section as every writer lays it out (ggml's gguf.cpp, gguf-py, GgufWriter): sorted by
/// offset, the first at 0, each next one at the previous one's end rounded up to the alignment,
/// and after the last one at most alignment - 1 bytes of padding. Bytes no tensor claims mean
/// that the tensor-info table and the data disagree: a header with a tensor info removed or a
/// decremented tensor count starts the data section earlier and reads every tensor from shifted
/// bytes (issue 51).
void check_tensor_bytes(GgufHeader& h, uint64_t file_size, const std::filesystem::path& file) {
  const uint64_t data_size = file_size - std::min(file_size, h.data_offset);
  std::vector<const GgufTensorInfo*> by_offset;
  for (const auto& t : h.tensors) {
    if (t.offset % h.alignment != 0)
      gguf_error(file, fmt::format("tensor '{}': offset {} is not a multiple of the alignment {}", t.name,
                                   t.offset, h.alignment));
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      gguf_error(file, fmt::format("tensor '{}': its {} bytes at offset {} of the data section lie past its end "
                                   "({} bytes): the file is truncated or corrupt; re-download it",
                                   t.name, t.n_bytes, t.offset, data_size));
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->offset + by_offset[i - 1]->n_bytes > by_offset[i]->offset)
      gguf_error(file, fmt::format("tensors '{}' and '{}' overlap in the data section", by_offset[i - 1]->name,
                                   by_offset[i]->name));
  // Every tensor lies inside the data section and none overlaps: `end` <= each next offset
  // <= data_size, so no subtraction below wraps.
  constexpr const char* kFewer = "the tensor-info table lists fewer tensors than the file holds (a truncated or "
                                 "edited header?)";
  constexpr const char* kGap = "the tensor-info table lists fewer tensors than the file holds, or a tensor's type "
                               "or shape was changed (a truncated or edited header?)";
  uint64_t end = 0;
  const GgufTensorInfo* previous = nullptr;
  for (const auto* t : by_offset) {
    if (t->offset - end >= h.alignment) {
      if (!previous)
        gguf_error(file, fmt::format("the data section's first {} bytes (offset 0..{}) belong to no tensor: the "
                                     "first tensor, '{}', starts at offset {}, not 0; {}",
                                     t->offset, t->offset, t->name, t->offset, kGap));
      gguf_error(file, fmt::format("{} bytes of the data section between tensor '{}' (offset {}..{}) and tensor "
                                   "'{}' (offset {}) belong to no tensor (writers leave less than the alignment {} "
                                   "there); {}",
                                   t->offset - end, previous->name, previous->offset, end, t->name, t->offset,
                                   h.alignment, kGap));
    }
    end = t->offset + t->n_bytes;
    previous = t;
  }
  if (data_size - end >= h.alignment) {
    if (!previous)
      gguf_error(file, fmt::format("{} bytes of the data section belong to no tensor: the header lists no "
                                   "tensors; {}",
                                   data_size, kFewer));
    gguf_error(file, fmt::format("{} bytes of the data section after tensor '{}' (offset {}..{}) belong to no "
                                 "tensor (writers pad the last tensor to less than the alignment {}); {}",
                                 data_size - end, previous->name, previous->offset, end, h.alignment, kFewer));
  }
}

}  // namespace

void gguf_error(const std::filesystem::path& file, const std::string& msg) {
  throw Error(fmt::format("GGUF file '{}': {}", file.string(), msg));
}

int64_t GgufTensorInfo::element_count() const {
  int64_t n = 1;
  for (auto d : dimensions) n *= d;
  return n;
}

const GgufValue* GgufHeader::find(const std::string& key) const {
  const auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

GgufHeader parse_gguf_header(const char* data, std::size_t size, uint64_t file_size,
                             const std::filesystem::path& file) {
  Cursor in(data, size, file_size, file);
  in.need(4, "the magic number");
  if (std::memcmp(data, "GGUF", 4) != 0)
    gguf_error(file, "does not start with the magic 'GGUF': not a GGUF file");
  in.read<uint32_t>("magic");
  GgufHeader h;
  h.version = in.read<uint32_t>("version");
  if (h.version != 2 && h.version != 3)
    gguf_error(file, fmt::format("version {} is not supported (2 and 3 are; version 1 files predate "
                                 "August 2023: convert them again with llama.cpp)",
                                 h.version));
  const auto tensor_count = in.read<uint64_t>("tensor count");
  const auto kv_count = in.read<uint64_t>("metadata count");
  in.check_count(kv_count, 8 + 4 + 1, "the metadata count");
  in.check_count(tensor_count, 8 + 4 + 8 + 4 + 8, "the tensor count");
  for (uint64_t i = 0; i < kv_count; ++i) {
    auto key = in.string("metadata key");
    auto value = read_value(in, key, file);
    if (!h.metadata.emplace(key, std::move(value)).second)
      gguf_error(file, fmt::format("metadata key '{}' appears twice", key));
  }
  h.alignment = read_alignment(h, file);
  std::set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    h.tensors.push_back(read_tensor_info(in, file));
    if (!names.insert(h.tensors.back().name).second)
      gguf_error(file, fmt::format("tensor name '{}' appears twice", h.tensors.back().name));
  }
  h.data_offset = (in.position() + h.alignment - 1) / h.alignment * h.alignment;
  if (h.data_offset > file_size && !h.tensors.empty())
    gguf_error(file, "the file ends before its data section: it is truncated; re-download it");
  check_tensor_bytes(h, file_size, file);
  return h;
}

}  // namespace headprune::models
