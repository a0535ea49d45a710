// Fuzzes reading a SentencePiece Unigram tokenizer from HF tokenizer.json
// (UnigramTokenizer::from_json: the vocabulary and its scores, the base64 Precompiled charsmap
// and its double-array trie, the Metaspace pre-tokenizer, added tokens, post-processor) and
// running it: any JSON in, a tokenizer or a headprune::Error out.
#include "models/errors.h"
#include "models/tokenizer/unigram_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::with_json(data, size, [](const nlohmann::json& j) {
    const auto tokenizer = headprune::models::UnigramTokenizer::from_json(j, "tokenizer.json");
    (void)tokenizer.encode("Ｈｅｌｌｏ, wörld ﬁ ｶﾞ 中文 😀<mask> \t x\xE3\x80\x80y", 64);
    (void)tokenizer.pre_tokenize(" a  b ");
  });
}
