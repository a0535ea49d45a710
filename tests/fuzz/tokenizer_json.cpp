// Fuzzes reading a WordPiece tokenizer from HF tokenizer.json (models/tokenizer/wordpiece_json.h)
// and building the tokenizer from what it returns: any JSON in, a tokenizer or a
// headprune::Error out.
#include "models/errors.h"
#include "models/tokenizer/wordpiece_json.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::with_json(data, size, [](const nlohmann::json& j) {
    headprune::models::WordPieceOptions options;
    auto vocab = headprune::models::wordpiece_from_tokenizer_json(j, "tokenizer.json", options);
    const headprune::models::WordPieceTokenizer tokenizer(std::move(vocab), options);
    (void)tokenizer.encode("Hello, unaffable world! cafés 中文", 16);
  });
}
