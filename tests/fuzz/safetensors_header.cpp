// Fuzzes the safetensors header parser. Input: 8 bytes giving the data-section size
// (little-endian), then the header text.
#include <cstring>

#include "models/errors.h"
#include "models/formats/safetensors_header.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  uint64_t data_size = 0;
  for (int i = 7; i >= 0; --i) data_size = (data_size << 8) | data[i];
  return headprune::fuzz::expecting_errors([&] {
    auto header = headprune::models::parse_safetensors_header(
        "fuzz.safetensors", headprune::fuzz::as_string(data + 8, size - 8), data_size);
    (void)header;
  });
}
