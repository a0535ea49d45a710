// Fuzzes the llama2.c checkpoint header. Input: the 28-byte header, then optionally 8 bytes
// giving the file size to check it against (little-endian; else the input's own size).
#include "models/errors.h"
#include "models/formats/llama2c_header.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  int64_t file_size = static_cast<int64_t>(size);
  if (size >= 36) {
    uint64_t claimed = 0;
    for (int i = 35; i >= 28; --i) claimed = (claimed << 8) | data[i];
    file_size = static_cast<int64_t>(claimed & 0x7fffffffffffffffULL);
  }
  return headprune::fuzz::expecting_errors([&] {
    const auto header = headprune::models::parse_llama2c_header(
        reinterpret_cast<const char*>(data), size, file_size, "fuzz.bin");
    (void)header.describe();
  });
}
