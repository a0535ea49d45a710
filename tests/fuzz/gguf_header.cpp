// Fuzzes the GGUF header parser and the dequantisation of every tensor it admits. Input: a
// whole GGUF file (its own size is the file size).
#include <vector>

#include "models/errors.h"
#include "models/formats/gguf_header.h"
#include "models/formats/gguf_quants.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::expecting_errors([&] {
    namespace m = headprune::models;
    const auto header = m::parse_gguf_header(reinterpret_cast<const char*>(data), size, size, "fuzz.gguf");
    for (const auto& t : header.tensors) {
      if (!m::ggml_type_traits(t.type).dequantizable || t.element_count() > (1 << 20)) continue;
      std::vector<float> out(static_cast<std::size_t>(t.element_count()));
      m::dequantize_row(t.type, data + header.data_offset + t.offset, out.data(), t.element_count());
    }
  });
}
