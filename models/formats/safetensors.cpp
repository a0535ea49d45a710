// Reading and writing the safetensors format (see safetensors.h for the layout).
//
// Reading: the header is parsed and every entry checked before any tensor is allocated;
// then each tensor is allocated with torch::empty and filled by one read straight from the
// file, in data-offset order, so the data section is read once, sequentially, and each tensor
// owns its own (suitably aligned) memory. Peak memory is the size of the tensors, not twice it.
//
// Writing: the header is built by hand (not with nlohmann's object dump) so that its layout
// is exactly what the reference writer produces: `__metadata__` first, then the tensors in
// key order, each as {"dtype":..,"shape":..,"data_offsets":..}, padded with spaces to a
// multiple of 8 bytes.
#include "models/formats/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/errors.h"
#include "models/formats/safetensors_header.h"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp copies tensor bytes as they are: it assumes a little-endian host"
#endif

namespace headprune::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// Largest header accepted, as in the reference implementation.
constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;
constexpr const char* kSupportedDtypes = kSafetensorsDtypes;

/// The torch type of each format dtype name (sizes: models/formats/safetensors_header.cpp).
struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
};

constexpr DtypeInfo kDtypes[] = {
    {"F64", torch::kFloat64}, {"F32", torch::kFloat32}, {"F16", torch::kFloat16},
    {"BF16", torch::kBFloat16}, {"I64", torch::kInt64}, {"I32", torch::kInt32},
    {"I16", torch::kInt16},    {"I8", torch::kInt8},     {"U8", torch::kUInt8},
    {"BOOL", torch::kBool},
};

const DtypeInfo* dtype_by_name(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const DtypeInfo* dtype_by_type(torch::ScalarType type) {
  for (const auto& d : kDtypes)
    if (type == d.type) return &d;
  return nullptr;
}

std::string quoted(const fs::path& p) { return fmt::format("'{}'", p.string()); }


std::string io_reason() {
  return errno != 0 ? std::string(" (") + std::strerror(errno) + ")" : std::string();
}


/// Opens `file` and reads its header (checked, as parse_safetensors_header checks it), leaving
/// `in` open and `data_start` at the data section's first byte.
SafetensorsHeader open_safetensors(const fs::path& file, std::ifstream& in, std::uint64_t& data_start) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    if (!fs::exists(file, ec)) safetensors_error(file, "no such file");
    safetensors_error(file, "not a regular file");
  }
  const std::uint64_t file_size = fs::file_size(file, ec);
  if (ec) safetensors_error(file, "cannot get its size: " + ec.message());

  errno = 0;
  in.open(file, std::ios::binary);
  if (!in) safetensors_error(file, "cannot open it for reading" + io_reason());

  if (file_size < 8)
    safetensors_error(file, "it is " + std::to_string(file_size) +
                   " bytes long, shorter than the 8-byte header length: it is not a "
                   "safetensors file, or " + kSafetensorsTruncatedHint);
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8))
    safetensors_error(file, "cannot read the header length" + io_reason());
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];

  if (header_len > kMaxHeaderBytes)
    safetensors_error(file, "the header length " + std::to_string(header_len) +
                   " is absurd (more than 100 MB): it is not a safetensors file, or " +
                   kSafetensorsCorruptHint);
  if (header_len > file_size - 8)
    safetensors_error(file, "the header length " + std::to_string(header_len) + " exceeds the " +
                   std::to_string(file_size - 8) + " bytes after it: " + kSafetensorsTruncatedHint +
                   " (or it is not a safetensors file)");

  std::string header_text(static_cast<std::size_t>(header_len), '\0');
  if (header_len > 0 && !in.read(header_text.data(), static_cast<std::streamsize>(header_len)))
    safetensors_error(file, "cannot read the " + std::to_string(header_len) + "-byte header" + io_reason());

  data_start = 8 + header_len;
  return parse_safetensors_header(file, header_text, file_size - 8 - header_len);
}

}  // namespace

SafetensorsHeader read_safetensors_header(const fs::path& file) {
  std::ifstream in;
  std::uint64_t data_start = 0;
  return open_safetensors(file, in, data_start);
}

TensorMap load_safetensors(const fs::path& file, std::map<std::string, std::string>* metadata) {
  std::ifstream in;
  std::uint64_t data_start = 0;
  const auto header = open_safetensors(file, in, data_start);
  const auto& entries = header.entries;
  auto meta = header.metadata;

  // Normal tensors even if the caller is in an inference-mode region.
  c10::InferenceMode not_inference(false);
  TensorMap out;
  for (const SafetensorsEntry& e : entries) {
    const auto type = dtype_by_name(e.dtype->name)->type;
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(type));
    const std::uint64_t nbytes = e.end - e.begin;
    if (nbytes > 0) {
      errno = 0;
      in.seekg(static_cast<std::streamoff>(data_start + e.begin));
      char* dst = static_cast<char*>(t.data_ptr());
      if (!in || !in.read(dst, static_cast<std::streamsize>(nbytes)))
        safetensors_error(file, e.name,
             "cannot read its " + std::to_string(nbytes) + " bytes" + io_reason() +
                 ": the file may have been truncated while being read; re-download or "
                 "re-export it");
      if (type == torch::kBool) {
        // Any byte but 0 / 1 in a bool tensor is undefined behaviour in C++ and torch.
        const auto* b = reinterpret_cast<const unsigned char*>(dst);
        for (std::uint64_t i = 0; i < nbytes; ++i)
          if (b[i] > 1)
            safetensors_error(file, e.name,
                 "BOOL element " + std::to_string(i) + " has byte value " +
                     std::to_string(int(b[i])) + ", not 0 or 1: " + kSafetensorsCorruptHint);
      }
    }
    out.emplace(e.name, std::move(t));
  }
  if (metadata) *metadata = std::move(meta);
  return out;
}

namespace {

/// The error for a folder with neither model.safetensors nor an index: what is there instead.
Error no_weights_error(const fs::path& dir) {
  std::error_code ec;
  std::string msg = "no weights found in checkpoint folder " + quoted(dir) + ": ";
  if (!fs::is_directory(dir, ec)) {
    msg += "the folder does not exist";
  } else {
    msg += "expected model.safetensors, or model.safetensors.index.json with its shards";
    for (const char* legacy : {"pytorch_model.bin", "pytorch_model.bin.index.json"})
      if (fs::exists(dir / legacy, ec)) {
        msg += std::string("; found ") + legacy +
               ", which is not supported: convert it to safetensors (for example load it in "
               "Python with transformers and save_pretrained(..., safe_serialization=True))";
        break;
      }
  }
  if (msg.find("pytorch_model.bin") == std::string::npos)
    msg += " (pytorch_model.bin checkpoints are not supported: convert them to safetensors)";
  return Error(msg);
}

/// The index's weight_map, checked, as shard file -> the tensor names the index puts in it.
std::map<std::string, std::set<std::string>> read_shard_index(
    const fs::path& index_file, json& weight_map,
    const std::function<Error(const std::string&)>& index_error) {
  json index;
  std::ifstream in(index_file, std::ios::binary);
  if (!in) throw index_error("cannot open it for reading");
  try {
    index = json::parse(in);
  } catch (const json::exception& e) {
    throw index_error(std::string("not valid JSON (") + e.what() +
                      "): re-download or re-export the checkpoint");
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw index_error("has no \"weight_map\" object mapping tensor names to shard files");
  weight_map = index["weight_map"];
  if (weight_map.empty()) throw index_error("\"weight_map\" lists no tensors");
  std::map<std::string, std::set<std::string>> shards;
  for (auto it = weight_map.begin(); it != weight_map.end(); ++it) {
    if (!it.value().is_string())
      throw index_error("\"weight_map\" entry for tensor '" + it.key() +
                        "' is not a shard file name but " + it.value().dump());
    const std::string shard = it.value().get<std::string>();
    const fs::path sp(shard);
    if (shard.empty() || sp.has_parent_path() || sp.is_absolute() || shard == "." ||
        shard == "..")
      throw index_error("tensor '" + it.key() + "' is mapped to \"" + shard +
                        "\", which is not a plain file name inside the checkpoint folder");
    shards[shard].insert(it.key());
  }
  return shards;
}

/// Loads one shard into `out`, checking that it holds exactly the tensors the index lists.
void load_shard(const fs::path& shard_path, const std::set<std::string>& names,
                const json& weight_map, const std::function<Error(const std::string&)>& index_error,
                TensorMap& out) {
  std::error_code ec;
  if (!fs::exists(shard_path, ec))
    throw index_error("shard " + quoted(shard_path) + " (holding tensor '" + *names.begin() +
                      "' and " + std::to_string(names.size() - 1) +
                      " more) does not exist: the checkpoint is incomplete; re-download it");
  TensorMap tensors = load_safetensors(shard_path);
  for (const std::string& name : names)
    if (tensors.find(name) == tensors.end())
      throw index_error("tensor '" + name + "' is listed in shard " + quoted(shard_path) +
                        " but the shard does not hold it: the index and the shards disagree; "
                        "re-download or re-export the checkpoint");
  for (auto& [name, tensor] : tensors) {
    if (names.count(name) == 0) {
      std::string where = "which the index does not list";
      if (weight_map.contains(name))
        where = "which the index lists in shard '" + weight_map[name].get<std::string>() + "'";
      throw index_error("shard " + quoted(shard_path) + " holds tensor '" + name + "', " + where +
                        ": the index and the shards disagree; re-download or re-export the "
                        "checkpoint");
    }
    out.emplace(name, std::move(tensor));
  }
}

}  // namespace

std::vector<fs::path> checkpoint_weight_files(const fs::path& dir) {
  std::error_code ec;
  const fs::path single = dir / "model.safetensors", index_file = dir / "model.safetensors.index.json";
  if (fs::exists(single, ec)) return {single};
  if (!fs::exists(index_file, ec)) throw no_weights_error(dir);
  json weight_map;
  std::vector<fs::path> files;
  const auto index_error = [&](const std::string& what) -> Error {
    return Error("checkpoint index " + quoted(index_file) + ": " + what);
  };
  for (const auto& entry : read_shard_index(index_file, weight_map, index_error)) files.push_back(dir / entry.first);
  return files;
}

TensorMap load_checkpoint_weights(const fs::path& dir) {
  std::error_code ec;
  const fs::path single = dir / "model.safetensors";
  const fs::path index_file = dir / "model.safetensors.index.json";
  if (fs::exists(single, ec)) return load_safetensors(single);
  if (!fs::exists(index_file, ec)) throw no_weights_error(dir);
  const auto index_error = [&](const std::string& what) -> Error {
    return Error("checkpoint index " + quoted(index_file) + ": " + what);
  };
  json weight_map;
  TensorMap out;
  for (const auto& [shard, names] : read_shard_index(index_file, weight_map, index_error))
    load_shard(dir / shard, names, weight_map, index_error, out);
  return out;
}

void save_safetensors(const fs::path& file, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const auto err = [&](const std::string& what) -> Error {
    return Error("cannot write safetensors file " + quoted(file) + ": " + what);
  };

  // Prepare every tensor (and fail on a bad one) before touching the file.
  std::vector<std::pair<const std::string*, torch::Tensor>> prepared;
  prepared.reserve(tensors.size());
  std::string header = "{";
  try {
    if (!metadata.empty()) header += std::string("\"") + kSafetensorsMetadataKey + "\":" + json(metadata).dump();
  } catch (const json::exception& e) {
    throw err(std::string("the metadata is not valid UTF-8 (") + e.what() + ")");
  }
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == kSafetensorsMetadataKey)
      throw err("a tensor cannot be named \"__metadata__\" (the key is reserved for metadata)");
    if (!tensor.defined()) throw err("tensor '" + name + "' is undefined");
    if (tensor.layout() != torch::kStrided)
      throw err("tensor '" + name + "' is not a dense tensor: call .to_dense() first");
    const DtypeInfo* d = dtype_by_type(tensor.scalar_type());
    if (!d)
      throw err("tensor '" + name + "' has dtype " +
                std::string(c10::toString(tensor.scalar_type())) +
                ", which safetensors files here cannot hold; supported dtypes are " +
                kSupportedDtypes + ": convert it with .to(...)");
    torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    const std::uint64_t nbytes = static_cast<std::uint64_t>(t.numel() * t.element_size());
    std::string entry;
    try {
      entry = json(name).dump();
    } catch (const json::exception& e) {
      throw err("tensor name is not valid UTF-8 (" + std::string(e.what()) + ")");
    }
    if (header.size() > 1) header += ',';
    header += entry + ":{\"dtype\":\"" + d->name + "\",\"shape\":" + json(t.sizes().vec()).dump() +
              ",\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
    prepared.emplace_back(&name, std::move(t));
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');

  errno = 0;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw err("cannot open it for writing" + io_reason());
  const auto write_failed = [&](const std::string& what) -> Error {
    const std::string reason = io_reason();
    out.close();
    std::error_code ec;
    fs::remove(file, ec);  // a partial file is never a valid one
    return err(what + reason);
  };
  unsigned char len_bytes[8];
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) len_bytes[i] = static_cast<unsigned char>(n & 0xff);
  out.write(reinterpret_cast<const char*>(len_bytes), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (!out) throw write_failed("writing the header failed");
  for (const auto& [name, t] : prepared) {
    const std::uint64_t nbytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
    if (nbytes == 0) continue;
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(nbytes));
    if (!out) throw write_failed("writing tensor '" + *name + "' failed");
  }
  out.flush();
  if (!out) throw write_failed("flushing failed");
  out.close();
  if (out.fail()) throw write_failed("closing failed");
}

}  // namespace headprune::models
