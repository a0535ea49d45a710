// Fuzzes building Gemma's SentencePiece tokenizer from a GGUF vocabulary
// (BpeTokenizer::from_gguf with tokenizer.ggml.model "llama": space-run respelling, merges
// recovered from the vocabulary, added tokens, byte fallback) and running it, then writing the
// vocabulary back (gemma_gguf_vocabulary). Input: the vocabulary as JSON,
// {"architecture", "tokens": [...], "token_types": [...], "bos", "eos", "unk", "pad",
// "add_bos", "add_eos"} (the GGUF keys themselves are gguf_header's harness).
#include <climits>

#include "models/errors.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

/// An integer of the input (a GGUF integer key); anything else is not this harness's input.
int64_t integer(const nlohmann::json& j, const char* key, int64_t fallback) {
  if (!j.contains(key)) return fallback;
  const auto& v = j.at(key);
  if (!v.is_number_integer()) throw nlohmann::json::type_error::create(302, "not an integer", &v);
  return v.get<int64_t>();
}

headprune::models::GgufVocabulary vocabulary_of(const nlohmann::json& j) {
  headprune::models::GgufVocabulary v;
  v.model = "llama";
  v.architecture = j.value("architecture", std::string("gemma3"));
  v.tokens = j.at("tokens").get<std::vector<std::string>>();
  for (const auto& type : j.value("token_types", nlohmann::json::array())) {
    if (!type.is_number_integer() || type.get<int64_t>() < INT32_MIN || type.get<int64_t>() > INT32_MAX)
      throw nlohmann::json::type_error::create(302, "not an int32", &type);
    v.token_types.push_back(static_cast<int32_t>(type.get<int64_t>()));
  }
  v.bos_id = integer(j, "bos", -1);
  v.eos_id = integer(j, "eos", -1);
  v.unk_id = integer(j, "unk", -1);
  v.pad_id = integer(j, "pad", -1);
  v.add_bos = j.value("add_bos", false);
  v.add_bos_given = j.contains("add_bos");
  v.add_eos = j.value("add_eos", false);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::with_json(data, size, [](const nlohmann::json& j) {
    namespace m = headprune::models;
    m::GgufVocabulary v;
    try {  // the harness's own reading of its input format is not under test
      v = vocabulary_of(j);
    } catch (const nlohmann::json::exception&) {
      return;
    }
    if (!v.token_types.empty() && v.token_types.size() != v.tokens.size()) return;  // read_gguf_vocabulary refuses
    const auto tokenizer = m::BpeTokenizer::from_gguf(v);
    const auto ids = tokenizer.encode_text("Hello,  world's 12345 cafés 中文 😀<start_of_turn>\n\n\t x", true);
    (void)tokenizer.decode(ids, true);
    (void)tokenizer.to_tokenizer_json();
    (void)m::gemma_gguf_vocabulary(tokenizer);
  });
}
