// Fuzzes reading a byte-level BPE tokenizer from HF tokenizer.json
// (BpeTokenizer::from_json: vocabulary, merges, pre-tokenizer regexes, added tokens,
// post-processor) and running it: any JSON in, a tokenizer or a headprune::Error out.
#include "models/errors.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::with_json(data, size, [](const nlohmann::json& j) {
    const auto tokenizer = headprune::models::BpeTokenizer::from_json(j, "tokenizer.json");
    const auto ids = tokenizer.encode_text("Hello, world's 12345 cafés 中文 😀<|im_end|>\n\t x", true);
    (void)tokenizer.decode(ids, true);
    (void)tokenizer.to_tokenizer_json();
  });
}
