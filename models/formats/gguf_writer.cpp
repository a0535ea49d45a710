#include "models/formats/gguf_writer.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <c10/util/Half.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

constexpr uint64_t kAlignment = 32;
constexpr int64_t kQ8Block = 32;

uint64_t padded(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

template <typename T>
void put(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));  // x86-64/aarch64: little-endian
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

void put_scalar(std::string& out, GgufValueType type, const nlohmann::json& v, const std::string& key) {
  try {
    switch (type) {
      case GgufValueType::UINT8: put(out, v.get<uint8_t>()); return;
      case GgufValueType::INT8: put(out, v.get<int8_t>()); return;
      case GgufValueType::UINT16: put(out, v.get<uint16_t>()); return;
      case GgufValueType::INT16: put(out, v.get<int16_t>()); return;
      case GgufValueType::UINT32: put(out, v.get<uint32_t>()); return;
      case GgufValueType::INT32: put(out, v.get<int32_t>()); return;
      case GgufValueType::UINT64: put(out, v.get<uint64_t>()); return;
      case GgufValueType::INT64: put(out, v.get<int64_t>()); return;
      case GgufValueType::FLOAT32: put(out, v.get<float>()); return;
      case GgufValueType::FLOAT64: put(out, v.get<double>()); return;
      case GgufValueType::BOOL: put<uint8_t>(out, v.get<bool>() ? 1 : 0); return;
      case GgufValueType::STRING: put_string(out, v.get<std::string>()); return;
      case GgufValueType::ARRAY: break;
    }
  } catch (const nlohmann::json::exception&) {
  }
  throw Error(fmt::format("GGUF writer: metadata '{}' value {} does not fit GGUF type {}", key, v.dump(),
                          static_cast<uint32_t>(type)));
}

/// The torch tensor's bytes in `type`.
std::string tensor_bytes(const torch::Tensor& t, GgmlType type) {
  if (type == GgmlType::F32)
    return {static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()) * sizeof(float)};
  if (type == GgmlType::F16) {
    const auto h = t.to(torch::kHalf).contiguous();
    return {static_cast<const char*>(h.data_ptr()), static_cast<std::size_t>(h.numel()) * 2};
  }
  return quantize_q8_0(t.data_ptr<float>(), t.numel());
}

}  // namespace

GgufValue gguf_string(const std::string& value) { return {GgufValueType::STRING, GgufValueType::UINT32, value}; }
GgufValue gguf_u32(uint32_t value) { return {GgufValueType::UINT32, GgufValueType::UINT32, value}; }
GgufValue gguf_f32(float value) { return {GgufValueType::FLOAT32, GgufValueType::UINT32, value}; }
GgufValue gguf_bool(bool value) { return {GgufValueType::BOOL, GgufValueType::UINT32, value}; }
GgufValue gguf_string_array(const std::vector<std::string>& values) {
  return {GgufValueType::ARRAY, GgufValueType::STRING, values};
}
GgufValue gguf_i32_array(const std::vector<int64_t>& values) {
  return {GgufValueType::ARRAY, GgufValueType::INT32, values};
}
GgufValue gguf_f32_array(const std::vector<float>& values) {
  return {GgufValueType::ARRAY, GgufValueType::FLOAT32, values};
}

std::string quantize_q8_0(const float* values, int64_t count) {
  if (count % kQ8Block != 0)
    throw Error(fmt::format("Q8_0 quantisation: {} values are not whole blocks of {}", count, kQ8Block));
  std::string out;
  out.reserve(static_cast<std::size_t>(count / kQ8Block * (2 + kQ8Block)));
  for (int64_t b = 0; b < count; b += kQ8Block) {
    const float* x = values + b;
    float amax = 0.0f;
    for (int64_t j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put<uint16_t>(out, c10::Half(d).x);  // round to nearest even, as GGML_FP32_TO_FP16
    for (int64_t j = 0; j < kQ8Block; ++j) put<int8_t>(out, static_cast<int8_t>(std::roundf(x[j] * id)));
  }
  return out;
}

void GgufWriter::add(const std::string& key, GgufValue value) {
  for (const auto& [k, v] : metadata_)
    if (k == key) throw Error(fmt::format("GGUF writer: metadata key '{}' added twice", key));
  std::string encoded;  // encoded now, so a value that does not fit its type fails here
  put<uint32_t>(encoded, static_cast<uint32_t>(value.type));
  if (value.type == GgufValueType::ARRAY) {
    if (!value.value.is_array() || value.array_type == GgufValueType::ARRAY)
      throw Error(fmt::format("GGUF writer: metadata '{}' must be an array of scalars or strings", key));
    put<uint32_t>(encoded, static_cast<uint32_t>(value.array_type));
    put<uint64_t>(encoded, value.value.size());
    for (const auto& e : value.value) put_scalar(encoded, value.array_type, e, key);
  } else {
    put_scalar(encoded, value.type, value.value, key);
  }
  metadata_.emplace_back(key, std::move(encoded));
}

void GgufWriter::add_tensor(const std::string& name, const torch::Tensor& data, GgmlType type) {
  for (const auto& t : tensors_)
    if (t.name == name) throw Error(fmt::format("GGUF writer: tensor '{}' added twice", name));
  if (type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::Q8_0)
    throw Error(fmt::format("GGUF writer: tensor '{}': type {} is not written (F32, F16, Q8_0 are)", name,
                            ggml_type_traits(type).name));
  if (data.dim() < 1 || data.dim() > 4 || data.numel() == 0)
    throw Error(fmt::format("GGUF writer: tensor '{}' has {} dimensions and {} values (1 to 4 dimensions, "
                            "non-empty)", name, data.dim(), data.numel()));
  if (type == GgmlType::Q8_0 && data.size(-1) % kQ8Block != 0)
    throw Error(fmt::format("GGUF writer: tensor '{}' rows of {} values cannot be Q8_0 (blocks of {}); store "
                            "it as F16 or F32", name, data.size(-1), kQ8Block));
  auto t = data.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const auto& traits = ggml_type_traits(type);
  const auto n_bytes = static_cast<uint64_t>(t.numel()) / traits.block_size * traits.type_size;
  tensors_.push_back({name, std::move(t), type, n_bytes});
}

void GgufWriter::write(std::ostream& out) const {
  std::string head = "GGUF";
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, metadata_.size());
  for (const auto& [key, encoded] : metadata_) {
    put_string(head, key);
    head += encoded;
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.data.dim()));
    for (int64_t d = t.data.dim() - 1; d >= 0; --d) put<uint64_t>(head, t.data.size(d));
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    offset = padded(offset);
    put<uint64_t>(head, offset);
    offset += t.n_bytes;
  }
  head.resize(padded(head.size()), '\0');
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  offset = 0;
  for (const auto& t : tensors_) {
    const std::string pad(padded(offset) - offset, '\0');
    out.write(pad.data(), static_cast<std::streamsize>(pad.size()));
    const auto bytes = tensor_bytes(t.data, t.type);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    offset = padded(offset) + bytes.size();
  }
  if (!out) throw Error("GGUF writer: the output stream failed (disk full?)");
}

std::string GgufWriter::bytes() const {
  std::ostringstream out;
  write(out);
  return std::move(out).str();
}

void GgufWriter::write_file(const std::filesystem::path& file) const {
  const auto tmp = file.parent_path() / fmt::format(".{}.tmp-{}", file.filename().string(), ::getpid());
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw Error(fmt::format("cannot create '{}': check that the folder exists and is writable", tmp.string()));
      write(out);
      out.close();
      if (!out) throw Error(fmt::format("writing '{}' failed (disk full?)", tmp.string()));
    }
    std::filesystem::rename(tmp, file);
  } catch (const std::exception& e) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw Error(fmt::format("GGUF file '{}' was not written: {}", file.string(), e.what()));
  }
}

}  // namespace headprune::models
