// Fuzzes reading a llama2.c tokenizer file (512 tokens, as stories260K's tok512.bin) and, when
// it reads, encoding and decoding text taken from the input's first bytes.
#include <algorithm>

#include "models/errors.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto bytes = headprune::fuzz::as_string(data, size);
  return headprune::fuzz::expecting_errors([&] {
    const auto tok = headprune::models::Llama2cTokenizer::from_bytes(bytes, 512, "fuzz.bin");
    const auto text = bytes.substr(0, std::min<std::size_t>(size, 64));
    const auto ids = tok.encode(text, true, false);
    (void)tok.decode(ids);
  });
}
