#include "models/formats/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "models/errors.h"

namespace headprune::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;


constexpr SafetensorsDtype kDtypeTable[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2},
                                            {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
                                            {"U8", 1},  {"BOOL", 1}};

const SafetensorsDtype* safetensors_dtype(const std::string& name) {
  for (const auto& d : kDtypeTable)
    if (name == d.name) return &d;
  return nullptr;
}


/// One checked header entry.
using Entry = SafetensorsEntry;

/// Reads a non-negative JSON integer; nullopt-like false if it is anything else.
bool as_u64(const json& v, std::uint64_t* out) {
  if (!v.is_number_unsigned()) return false;  // nlohmann stores every integer >= 0 as unsigned
  *out = v.get<std::uint64_t>();
  return true;
}

Entry parse_entry(const fs::path& file, const std::string& name, const json& v) {
  if (!v.is_object())
    safetensors_error(file, name,
         "the header entry is not an object {\"dtype\", \"shape\", \"data_offsets\"} but " +
             v.dump() + ": " + kSafetensorsCorruptHint);
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key))
      safetensors_error(file, name, std::string("the header entry has no \"") + key + "\": " + kSafetensorsCorruptHint);

  Entry e;
  e.name = name;
  const json& dtype = v.at("dtype");
  if (!dtype.is_string())
    safetensors_error(file, name, "\"dtype\" is not a string but " + dtype.dump() + ": " + kSafetensorsCorruptHint);
  e.dtype = safetensors_dtype(dtype.get<std::string>());
  if (!e.dtype)
    safetensors_error(file, name,
         "unsupported dtype \"" + dtype.get<std::string>() + "\"; supported dtypes are " +
             kSafetensorsDtypes + ": convert the checkpoint to one of them");

  const json& shape = v.at("shape");
  if (!shape.is_array())
    safetensors_error(file, name, "\"shape\" is not an array but " + shape.dump() + ": " + kSafetensorsCorruptHint);
  std::uint64_t numel = 1;
  bool overflow = false;
  for (const json& d : shape) {
    std::uint64_t dim = 0;
    if (!as_u64(d, &dim) ||
        dim > static_cast<std::uint64_t>(std::numeric_limits<int64_t>::max()))
      safetensors_error(file, name,
           "\"shape\" " + shape.dump() +
               " has an entry that is not a non-negative integer: " + kSafetensorsCorruptHint);
    e.shape.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && numel > std::numeric_limits<std::uint64_t>::max() / dim) overflow = true;
    numel *= dim;
  }

  const json& offsets = v.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !as_u64(offsets[0], &e.begin) ||
      !as_u64(offsets[1], &e.end))
    safetensors_error(file, name,
         "\"data_offsets\" " + offsets.dump() +
             " is not [BEGIN, END] with non-negative integers: " + kSafetensorsCorruptHint);
  if (e.begin > e.end)
    safetensors_error(file, name,
         "\"data_offsets\" " + offsets.dump() + " has BEGIN > END: " + kSafetensorsCorruptHint);

  // numel == 0 makes any overflow of the earlier product irrelevant.
  const bool zero = std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end();
  if (!zero && (overflow || numel > std::numeric_limits<std::uint64_t>::max() / e.dtype->itemsize))
    safetensors_error(file, name, "\"shape\" " + shape.dump() + " is too large: " + kSafetensorsCorruptHint);
  const std::uint64_t nbytes = zero ? 0 : numel * e.dtype->itemsize;
  if (nbytes != e.end - e.begin)
    safetensors_error(file, name,
         "shape " + shape.dump() + " of " + e.dtype->name + " needs " + std::to_string(nbytes) +
             " bytes but data_offsets " + offsets.dump() + " span " +
             std::to_string(e.end - e.begin) + ": " + kSafetensorsCorruptHint);
  return e;
}

/// Parses the header text, refusing a key that appears twice in one object (JSON parsers
/// differ on which copy wins; the format's reference parser rejects it).
json parse_header_json(const fs::path& file, const std::string& text) {
  std::vector<std::set<std::string>> keys_in_object;
  std::string duplicate;
  const json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys_in_object.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys_in_object.empty()) keys_in_object.pop_back();
    else if (event == json::parse_event_t::key && !keys_in_object.empty() &&
             !keys_in_object.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(text, track);
  } catch (const json::exception& e) {
    safetensors_error(file, std::string("the header is not valid JSON (") + e.what() + "): " + kSafetensorsCorruptHint);
  }
  if (!duplicate.empty())
    safetensors_error(file, "the header names '" + duplicate + "' twice: " + kSafetensorsCorruptHint);
  return header;
}

}  // namespace

void safetensors_error(const fs::path& file, const std::string& msg) {
  throw Error("safetensors file '" + file.string() + "': " + msg);
}

void safetensors_error(const fs::path& file, const std::string& tensor, const std::string& msg) {
  throw Error("safetensors file '" + file.string() + "', tensor '" + tensor + "': " + msg);
}

SafetensorsHeader parse_safetensors_header(const fs::path& file, const std::string& header_text,
                                           std::uint64_t data_size) {
  // The format: the header starts with '{' and may be padded at the end with spaces only.
  if (header_text.empty() || header_text.front() != '{')
    safetensors_error(file, std::string("the header does not start with '{': ") + kSafetensorsCorruptHint);
  const json header = parse_header_json(file, header_text);
  if (!header.is_object())
    safetensors_error(file, "the header is not a JSON object but a " + std::string(header.type_name()) +
                   ": " + kSafetensorsCorruptHint);

  SafetensorsHeader result;
  auto& meta = result.metadata;
  auto& entries = result.entries;
  entries.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kSafetensorsMetadataKey) {
      if (!it.value().is_object())
        safetensors_error(file, "\"__metadata__\" is not an object of strings but " + it.value().dump() +
                       ": " + kSafetensorsCorruptHint);
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          safetensors_error(file, "\"__metadata__\" entry \"" + m.key() + "\" is not a string but " +
                         m.value().dump() + ": " + kSafetensorsCorruptHint);
        meta[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(file, it.key(), it.value()));
  }

  // Bounds, holes and overlaps, in file order. Zero-size tensors occupy no bytes and overlap nothing.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (const Entry& e : entries)
    if (e.end > data_size)
      safetensors_error(file, e.name,
           "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
               "] end beyond the data section, which has only " + std::to_string(data_size) +
               " bytes: " + kSafetensorsTruncatedHint);
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.end == e.begin) continue;
    // The format requires the byte buffer to be entirely indexed: no holes between tensors.
    if ((prev ? prev->end : 0) < e.begin)
      safetensors_error(file, e.name,
           "its bytes start at " + std::to_string(e.begin) + " but the previous tensor ends at " +
               std::to_string(prev ? prev->end : 0) +
               ": the data section has a hole, which the format forbids: " + kSafetensorsCorruptHint);
    if (prev && e.begin < prev->end)
      safetensors_error(file, e.name,
           "its bytes [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
               ") overlap those of tensor '" + prev->name + "' [" + std::to_string(prev->begin) +
               ", " + std::to_string(prev->end) + "): " + kSafetensorsCorruptHint);
    prev = &e;
  }
  // No overlaps: the last non-empty tensor ends where the indexed bytes end.
  const std::uint64_t indexed = prev ? prev->end : 0;
  if (indexed < data_size)
    safetensors_error(file, "the data section has " + std::to_string(data_size - indexed) +
                   " bytes after the last tensor that no tensor indexes, which the format "
                   "forbids: " + kSafetensorsCorruptHint);

  return result;
}

}  // namespace headprune::models
