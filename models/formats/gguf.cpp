#include "models/formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/input_file.h"

namespace headprune::models {
namespace {

constexpr uint64_t kFirstHeaderRead = uint64_t{4} << 20;  // most headers (with vocabularies) fit

std::vector<char> read_bytes(std::ifstream& in, uint64_t offset, uint64_t n, const std::filesystem::path& file) {
  std::vector<char> bytes(static_cast<std::size_t>(n));
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  if (static_cast<uint64_t>(in.gcount()) != n)
    gguf_error(file, fmt::format("reading {} bytes at offset {} failed (file changed while reading?)", n, offset));
  return bytes;
}

}  // namespace

GgufFile read_gguf(const std::filesystem::path& file) {
  GgufFile gguf;
  gguf.path = file;
  auto in = open_input_file(file, "GGUF file");
  std::error_code ec;
  gguf.file_size = std::filesystem::file_size(file, ec);
  if (ec) gguf_error(file, "cannot read its size: " + ec.message());
  for (uint64_t n = std::min(kFirstHeaderRead, gguf.file_size);; n = std::min(2 * n, gguf.file_size)) {
    const auto bytes = read_bytes(in, 0, n, file);
    try {
      gguf.header = parse_gguf_header(bytes.data(), bytes.size(), gguf.file_size, file);
      return gguf;
    } catch (const GgufNeedMoreBytes&) {
      if (n == gguf.file_size) gguf_error(file, "the header runs past the end of the file");
    }
  }
}

torch::Tensor read_gguf_tensor(const GgufFile& gguf, const GgufTensorInfo& info) {
  const auto traits = ggml_type_traits(info.type);
  if (!traits.dequantizable)
    gguf_error(gguf.path, fmt::format("tensor '{}' has type {}, which this reader cannot dequantise "
                                      "(supported: {}): convert it with llama.cpp's llama-quantize to one of those",
                                      info.name, traits.name, ggml_dequantizable_types()));
  auto in = open_input_file(gguf.path, "GGUF file");
  const auto bytes = read_bytes(in, gguf.header.data_offset + info.offset, info.n_bytes, gguf.path);
  const auto shape = info.torch_shape();
  if (info.type == GgmlType::F16 || info.type == GgmlType::BF16) {
    auto t = torch::empty(shape, info.type == GgmlType::F16 ? torch::kHalf : torch::kBFloat16);
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    return t;
  }
  auto t = torch::empty(shape, torch::kFloat);
  dequantize_row(info.type, reinterpret_cast<const uint8_t*>(bytes.data()), t.data_ptr<float>(),
                 info.element_count());
  return t;
}

}  // namespace headprune::models
