// Fuzzes the GGUF header parser's tensor-info table (issue 51) structure-aware: the input is an
// edit script applied to a small valid GGUF built here (eight tensors of eight ggml types, laid
// out as ggml's and gguf-py's writers do), so that nearly every input reaches the table checks
// instead of dying in the magic or a metadata length. Operations: set the tensor count, drop,
// duplicate, swap or rename a tensor info, set an offset (raw, or relative to another tensor),
// set a ggml type, the dimension count or a dimension, lay the table out again the writers' way,
// truncate / append / insert data bytes, set general.alignment or the version. The file is then
// parsed by parse_gguf_header; if accepted, every tensor is dequantised as the gguf_header
// harness does, and the layout is checked against an independent oracle (in bounds, aligned,
// tiling the data section). A prefix of the file is also parsed with the whole file's size, as
// read_gguf's retry loop does: it must ask for more bytes, fail, or give the same header.
//
// Input: a sequence of { u8 op, arguments }; arguments past the end of the input read as 0.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "models/errors.h"
#include "models/formats/gguf_header.h"
#include "models/formats/gguf_quants.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace m = headprune::models;

/// Reads the edit script; reads past its end give zeros.
class Script {
 public:
  Script(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t bytes(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{u8()} << (8 * i);
    return v;
  }
  /// A 64-bit value, biased towards the edges a layout check has.
  uint64_t value() {
    static constexpr uint64_t kEdges[] = {0, 1, 2, 31, 32, 33, 63, 64, 4096, uint64_t{1} << 31,
                                          (uint64_t{1} << 32) - 1, uint64_t{1} << 32, (uint64_t{1} << 63) - 1,
                                          uint64_t{1} << 63, ~uint64_t{0} - 31, ~uint64_t{0}};
    switch (u8() % 8) {
      case 0: return u8();
      case 1: return bytes(2);
      case 2: return bytes(4);
      case 3: return bytes(8);
      case 4: return kEdges[u8() % (sizeof kEdges / sizeof kEdges[0])];
      case 5: return uint64_t{u8()} * 32;
      case 6: return bytes(2) * 32;
      default: return ~uint64_t{0} - u8();  // small negative numbers
    }
  }

 private:
  const uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

struct Info {
  std::string name;
  std::vector<uint64_t> dims;  // written as they are; n_dims = dims.size() unless overridden
  std::optional<uint32_t> n_dims;
  uint32_t type = 0;
  uint64_t offset = 0;
};

/// A GGUF file being edited: what the header says, and the data section's bytes.
struct File {
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count;  // written instead of infos.size()
  std::optional<uint32_t> alignment;     // general.alignment, when present
  std::vector<Info> infos;
  std::string data;

  uint64_t padding() const {
    const uint64_t a = alignment.value_or(32);
    return a != 0 && (a & (a - 1)) == 0 && a <= 4096 ? a : 32;
  }
};

/// n_bytes of a tensor as a writer computes it; nullopt when the type is unknown, the shape
/// does not hold whole blocks, or the size is absurd.
std::optional<uint64_t> tensor_bytes(const Info& t) {
  const auto traits = m::ggml_type_traits(t.type);
  if (!traits || t.dims.empty()) return std::nullopt;
  uint64_t elements = 1;
  for (auto d : t.dims) {
    if (d == 0 || d > (uint64_t{1} << 20) || elements > (uint64_t{1} << 20) / d) return std::nullopt;
    elements *= d;
  }
  if (t.dims[0] % static_cast<uint64_t>(traits->block_size) != 0) return std::nullopt;
  return elements / static_cast<uint64_t>(traits->block_size) * static_cast<uint64_t>(traits->type_size);
}

/// Offsets as the writers give them (each at the previous end rounded up), data resized to match;
/// tensors whose size is unknown or large keep their offsets.
void lay_out(File& f, bool pad_last) {
  const uint64_t a = f.padding();
  uint64_t end = 0;
  for (auto& t : f.infos) {
    const auto n = tensor_bytes(t);
    if (!n) continue;
    t.offset = (end + a - 1) / a * a;
    end = t.offset + *n;
  }
  if (pad_last) end = (end + a - 1) / a * a;
  if (end <= (uint64_t{1} << 22)) f.data.resize(static_cast<std::size_t>(end), '\x5a');
}

File base_file() {
  File f;
  // name, dims (GGUF order), ggml type: a LLaMA-like table of every dequantisable block layout.
  f.infos = {{"token_embd.weight", {256, 2}, std::nullopt, 12, 0},          // Q4_K
             {"blk.0.attn_q.weight", {32, 4}, std::nullopt, 8, 0},          // Q8_0
             {"blk.0.attn_norm.weight", {32}, std::nullopt, 0, 0},          // F32
             {"blk.0.attn_k.weight", {64, 2}, std::nullopt, 2, 0},          // Q4_0
             {"blk.0.ffn_down.weight", {256}, std::nullopt, 14, 0},         // Q6_K
             {"blk.0.ffn_up.weight", {256}, std::nullopt, 13, 0},           // Q5_K
             {"output_norm.weight", {16}, std::nullopt, 1, 0},              // F16
             {"output.weight", {32, 3}, std::nullopt, 3, 0}};               // Q4_1
  lay_out(f, true);
  uint32_t x = 12345;
  for (auto& c : f.data) {
    x = x * 1664525 + 1013904223;
    c = static_cast<char>(x >> 24);
  }
  return f;
}

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

std::string serialize(const File& f) {
  std::string out = "GGUF";
  put<uint32_t>(out, f.version);
  put<uint64_t>(out, f.tensor_count.value_or(f.infos.size()));
  put<uint64_t>(out, f.alignment ? 2 : 1);
  put_string(out, "general.architecture");
  put<uint32_t>(out, 8);  // STRING
  put_string(out, "llama");
  if (f.alignment) {
    put_string(out, "general.alignment");
    put<uint32_t>(out, 4);  // UINT32
    put<uint32_t>(out, *f.alignment);
  }
  for (const auto& t : f.infos) {
    put_string(out, t.name);
    put<uint32_t>(out, t.n_dims.value_or(static_cast<uint32_t>(t.dims.size())));
    for (auto d : t.dims) put<uint64_t>(out, d);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, t.offset);
  }
  const uint64_t a = f.padding();
  out.resize((out.size() + a - 1) / a * a, '\0');
  return out + f.data;
}

constexpr std::size_t kMaxData = std::size_t{1} << 20;

/// Applies one operation; its arguments are read in the order written.
void apply(File& f, Script& s) {
  const auto pick = [&]() -> std::size_t { return f.infos.empty() ? 0 : s.u8() % f.infos.size(); };
  const uint8_t op = s.u8() % 17;
  if (f.infos.empty() && op >= 1 && op <= 7) return;
  switch (op) {
    case 0: f.tensor_count = s.value(); break;
    case 1: f.infos.erase(f.infos.begin() + static_cast<std::ptrdiff_t>(pick())); break;
    case 2: {  // duplicate, renamed unless the script says otherwise
      auto t = f.infos[pick()];
      if (s.u8() % 4 != 0) t.name += ".copy";
      if (f.infos.size() < 64) f.infos.push_back(t);
      break;
    }
    case 3: {
      const auto i = pick();
      f.infos[i].offset = s.value();
      break;
    }
    case 4: {  // an offset relative to another tensor's: its offset + k·32 (k may be negative)
      const auto i = pick(), j = pick();
      f.infos[i].offset = f.infos[j].offset + static_cast<uint64_t>(static_cast<int8_t>(s.u8())) * 32;
      break;
    }
    case 5: {
      const auto i = pick();
      f.infos[i].type = s.u8() % 40;
      break;
    }
    case 6: {
      auto& t = f.infos[pick()];
      const uint8_t n = s.u8();
      if (n & 0x80) {
        t.n_dims = n & 0x7f;  // a count that disagrees with the dimensions written
      } else {
        t.dims.resize(n % 6, 1);
        t.n_dims.reset();
      }
      break;
    }
    case 7: {
      auto& t = f.infos[pick()];
      const auto d = s.u8();
      const auto v = s.value();
      if (!t.dims.empty()) t.dims[d % t.dims.size()] = v;
      break;
    }
    case 8: f.data.resize(f.data.size() - std::min<std::size_t>(f.data.size(), s.bytes(2))); break;
    case 9: {
      const auto n = s.bytes(2);
      const auto c = static_cast<char>(s.u8());
      if (f.data.size() < kMaxData) f.data.append(n, c);
      break;
    }
    case 10: {  // insert bytes inside the data (shifts every later tensor)
      const auto at = std::min<std::size_t>(f.data.size(), s.bytes(2));
      const auto n = s.u8();
      if (f.data.size() < kMaxData) f.data.insert(at, n, '\0');
      break;
    }
    case 11: {
      const auto v = s.u8();
      if (v == 0) f.alignment.reset();
      else f.alignment = v < 16 ? uint32_t{1} << (v - 1) : static_cast<uint32_t>(s.value());
      break;
    }
    case 12: {
      const auto i = pick(), j = pick();
      std::swap(f.infos[i], f.infos[j]);
      break;
    }
    case 13: {  // rename to another tensor's name (a repeated name)
      const auto i = pick(), j = pick();
      f.infos[i].name = f.infos[j].name;
      break;
    }
    case 14: lay_out(f, s.u8() % 2 == 0); break;
    case 15: f.version = static_cast<uint32_t>(s.u8() % 5); break;
    default: f.tensor_count = f.infos.size() + static_cast<uint64_t>(static_cast<int8_t>(s.u8() % 5 - 2)); break;
  }
}

/// What the parser promises of an accepted header, checked on its own.
void check_layout(const m::GgufHeader& h, std::size_t file_size) {
  if (h.data_offset % h.alignment != 0) __builtin_trap();
  const uint64_t data_size = file_size > h.data_offset ? file_size - h.data_offset : 0;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& t : h.tensors) {
    if (t.offset % h.alignment != 0 || t.offset > data_size || t.n_bytes > data_size - t.offset) __builtin_trap();
    spans.emplace_back(t.offset, t.offset + t.n_bytes);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t end = 0;
  for (const auto& [from, to] : spans) {
    if (from < end || from - end >= h.alignment) __builtin_trap();
    end = to;
  }
  if (data_size - end >= h.alignment) __builtin_trap();
}

bool same(const m::GgufHeader& a, const m::GgufHeader& b) {
  if (a.version != b.version || a.alignment != b.alignment || a.data_offset != b.data_offset ||
      a.tensors.size() != b.tensors.size() || a.metadata.size() != b.metadata.size())
    return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.dimensions != y.dimensions || x.type != y.type || x.offset != y.offset ||
        x.n_bytes != y.n_bytes)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const File base = base_file();
  File f = base;
  Script script(data, size);
  const std::size_t prefix_choice = script.bytes(2);
  for (int ops = 0; !script.done() && ops < 64; ++ops) apply(f, script);
  const auto bytes = serialize(f);
  return headprune::fuzz::expecting_errors([&] {
    const auto header = m::parse_gguf_header(bytes.data(), bytes.size(), bytes.size(), "fuzz.gguf");
    check_layout(header, bytes.size());
    for (const auto& t : header.tensors) {
      if (!m::ggml_type_traits(t.type).dequantizable || t.element_count() > (1 << 20)) continue;
      std::vector<float> out(static_cast<std::size_t>(t.element_count()));
      m::dequantize_row(t.type, reinterpret_cast<const uint8_t*>(bytes.data()) + header.data_offset + t.offset,
                        out.data(), t.element_count());
    }
    // read_gguf parses a first part of the file and retries with more when asked.
    const std::size_t n = prefix_choice % (bytes.size() + 1);
    const std::vector<char> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    try {
      if (!same(m::parse_gguf_header(prefix.data(), prefix.size(), bytes.size(), "fuzz.gguf"), header))
        __builtin_trap();
    } catch (const m::GgufNeedMoreBytes&) {
    } catch (const headprune::Error&) {
      __builtin_trap();  // the whole file parsed: a first part of it must not be refused
    }
  });
}
