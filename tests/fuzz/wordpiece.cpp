// Fuzzes WordPiece tokenization (basic tokenizer, Unicode normalisation, greedy longest-match
// pieces) on a fixed vocabulary: any bytes in, ids or a headprune::Error out.
#include <limits>

#include "models/errors.h"
#include "models/tokenizer/wordpiece.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const headprune::models::WordPieceTokenizer& tokenizer() {
  static const headprune::models::WordPieceTokenizer tok(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "un", "##aff", "##able", "hello", ",",
       ".", "a", "##a", "é", "##é", "中", "cafe", "##s", "!", "'", "##ing", "run"},
      headprune::models::WordPieceOptions{});
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::expecting_errors([&] {
    const auto text = headprune::fuzz::as_string(data, size);
    (void)tokenizer().encode(text, std::numeric_limits<std::size_t>::max());
    (void)tokenizer().encode(text, 8);
  });
}
