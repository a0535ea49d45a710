// Tests of the byte-level BPE tokenizer (models/tokenizer/bpe_tokenizer.h).
//
// The reference is HF `tokenizers` 0.23.3: tests/fixtures/smollm2/ holds SmolLM2-135M-Instruct's
// tokenizer.json (built from the GGUF's vocabulary as upstream's), its ids and decodings of 249
// hard texts (encodings.json), and the pre-tokenizer pieces and ids of the GPT-2, Llama 3 and
// Qwen2 pipelines over the same texts (pre_tokenizers.json); tools/make_bpe_fixtures.py wrote
// them.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace bpe_tokenizer_test {

using headprune::models::BpeTokenizer;
using headprune::models::GgufVocabulary;
using Ids = std::vector<int64_t>;

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(HEADPRUNE_SOURCE_DIR) / "tests" / "fixtures" / "smollm2" / name;
}

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  CATCH_REQUIRE(in);
  return nlohmann::json::parse(in);
}

const nlohmann::json& smollm2_json() {
  static const auto j = read_json(fixture("tokenizer.json"));
  return j;
}

const BpeTokenizer& smollm2() {
  static const auto tokenizer = BpeTokenizer::from_tokenizer_json(fixture("tokenizer.json"));
  return tokenizer;
}

const nlohmann::json& cases() {
  static const auto j = read_json(fixture("encodings.json")).at("cases");
  return j;
}

/// The GGUF metadata of SmolLM2-135M-Instruct, rebuilt from its tokenizer.json (control tokens
/// 0..16, ids as in the .gguf file).
GgufVocabulary smollm2_gguf() {
  const auto& model = smollm2_json().at("model");
  GgufVocabulary v;
  v.model = "gpt2";
  v.pre = "smollm";
  v.tokens.resize(model.at("vocab").size());
  for (const auto& [token, id] : model.at("vocab").items()) v.tokens.at(id.get<std::size_t>()) = token;
  v.token_types.assign(v.tokens.size(), 1);
  for (const auto& added : smollm2_json().at("added_tokens")) v.token_types.at(added.at("id").get<std::size_t>()) = 3;
  for (const auto& merge : model.at("merges")) v.merges.push_back(merge[0].get<std::string>() + " " + merge[1].get<std::string>());
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.pad_id = 2;
  return v;
}

/// Checks `tokenizer` against every fixture text's HF ids.
void check_ids(const BpeTokenizer& tokenizer) {
  for (const auto& c : cases()) {
    const auto text = c.at("text").get<std::string>();
    CATCH_INFO("text " << nlohmann::json(text).dump());
    CATCH_CHECK(tokenizer.encode_text(text, false) == c.at("ids").get<Ids>());
  }
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const headprune::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace bpe_tokenizer_test

using bpe_tokenizer_test::Ids;
using headprune::models::BpeTokenizer;
using headprune::models::GgufVocabulary;

CATCH_TEST_CASE("SmolLM2 byte-level BPE ids equal HF tokenizers on every fixture text", "[bpe]") {
  CATCH_REQUIRE(bpe_tokenizer_test::cases().size() >= 200);
  bpe_tokenizer_test::check_ids(bpe_tokenizer_test::smollm2());
}

CATCH_TEST_CASE("SmolLM2 decode equals HF tokenizers decode, with and without special tokens", "[bpe]") {
  const auto& tokenizer = bpe_tokenizer_test::smollm2();
  for (const auto& c : bpe_tokenizer_test::cases()) {
    const auto ids = c.at("ids").get<Ids>();
    CATCH_INFO("text " << c.at("text").dump());
    CATCH_CHECK(tokenizer.decode(ids) == c.at("decoded").get<std::string>());
    CATCH_CHECK(tokenizer.decode(ids, true) == c.at("decoded_skip").get<std::string>());
    CATCH_CHECK(tokenizer.decode(tokenizer.encode_text(c.at("text").get<std::string>(), false)) ==
                c.at("text").get<std::string>());
  }
}

CATCH_TEST_CASE("the GPT-2, Llama 3 and Qwen2 pre-tokenizers split and encode as HF tokenizers", "[bpe]") {
  const auto variants = bpe_tokenizer_test::read_json(bpe_tokenizer_test::fixture("pre_tokenizers.json")).at("variants");
  CATCH_REQUIRE(variants.size() >= 4);
  for (const auto& variant : variants) {
    auto j = bpe_tokenizer_test::smollm2_json();
    j["normalizer"] = variant.at("normalizer");
    j["pre_tokenizer"] = variant.at("pre_tokenizer");
    j["model"]["ignore_merges"] = variant.at("ignore_merges");
    const auto tokenizer = BpeTokenizer::from_json(j, variant.at("name").get<std::string>());
    for (const auto& c : variant.at("cases")) {
      const auto text = c.at("text").get<std::string>();
      CATCH_INFO(variant.at("name").get<std::string>() << ": text " << c.at("text").dump());
      CATCH_CHECK(tokenizer.pre_tokenize(text) == c.at("pieces").get<std::vector<std::string>>());
      CATCH_CHECK(tokenizer.encode_text(text, false) == c.at("ids").get<Ids>());
    }
  }
}

CATCH_TEST_CASE("a tokenizer from GGUF metadata encodes as the HF tokenizer.json", "[bpe]") {
  const auto tokenizer = BpeTokenizer::from_gguf(bpe_tokenizer_test::smollm2_gguf());
  bpe_tokenizer_test::check_ids(tokenizer);
  CATCH_CHECK(tokenizer.pad_id() == 2);
  CATCH_CHECK(tokenizer.vocab_size() == 49152);
  CATCH_CHECK(tokenizer.is_special(1));
  CATCH_CHECK_FALSE(tokenizer.is_special(100));
  CATCH_CHECK(tokenizer.token_text(1) == "<|im_start|>");
  CATCH_CHECK(tokenizer.token_text(216) == "\xC4\xA0");  // "Ġ"
  CATCH_CHECK_THROWS_WITH(tokenizer.token_text(49152), Catch::Contains("no token has id 49152"));
}

CATCH_TEST_CASE("to_tokenizer_json round-trips: the written tokenizer.json encodes identically", "[bpe]") {
  auto vocabulary = bpe_tokenizer_test::smollm2_gguf();
  vocabulary.add_bos = true;
  const auto tokenizer = BpeTokenizer::from_gguf(vocabulary);
  const auto dir = std::filesystem::temp_directory_path() / "headprune-bpe-round-trip";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << tokenizer.to_tokenizer_json().dump();
  std::ofstream(dir / "tokenizer_config.json") << tokenizer.to_tokenizer_config_json().dump();
  const auto again = BpeTokenizer::from_tokenizer_json(dir / "tokenizer.json");
  for (const auto& c : bpe_tokenizer_test::cases()) {
    const auto text = c.at("text").get<std::string>();
    auto expected = c.at("ids").get<Ids>();
    expected.insert(expected.begin(), 1);  // BOS from the TemplateProcessing post-processor
    CATCH_INFO("text " << c.at("text").dump());
    CATCH_CHECK(again.encode_text(text, true) == expected);
  }
  CATCH_CHECK(again.pad_id() == 2);
  CATCH_CHECK(again.to_tokenizer_json() == tokenizer.to_tokenizer_json());
}

CATCH_TEST_CASE("encode with max_length truncates the text and keeps BOS as HF does", "[bpe]") {
  auto vocabulary = bpe_tokenizer_test::smollm2_gguf();
  vocabulary.add_bos = true;
  const auto tokenizer = BpeTokenizer::from_gguf(vocabulary);
  const auto full = tokenizer.encode_text("The quick brown fox jumps over the lazy dog.", true);
  CATCH_REQUIRE(full.size() > 5);
  CATCH_CHECK(tokenizer.encode("The quick brown fox jumps over the lazy dog.", 4) == Ids(full.begin(), full.begin() + 4));
  CATCH_CHECK(tokenizer.encode("", 4) == Ids{1});
  CATCH_CHECK_THROWS_WITH(tokenizer.encode("x", 0), Catch::Contains("max_length 0 leaves no room"));
  CATCH_CHECK(bpe_tokenizer_test::smollm2().encode("Hello world", 1).size() == 1);
}

CATCH_TEST_CASE("invalid UTF-8 is refused with its byte offset", "[bpe]") {
  CATCH_CHECK_THROWS_WITH(bpe_tokenizer_test::smollm2().encode_text(std::string("abc\xC3(", 5), false),
                          Catch::Contains("invalid UTF-8 at byte offset 3"));
  CATCH_CHECK_THROWS_WITH(bpe_tokenizer_test::smollm2().encode_text(std::string("\xED\xA0\x80"), false),
                          Catch::Contains("byte offset 0"));
  // decode of bytes that are not UTF-8 replaces them (HF: from_utf8_lossy)
  CATCH_CHECK(bpe_tokenizer_test::smollm2().decode({*bpe_tokenizer_test::smollm2().token_to_id("\xC3\x83")}) ==
              "\xEF\xBF\xBD");
}

CATCH_TEST_CASE("GGUF vocabularies that are not byte-level BPE, or of unknown pre, are refused by name", "[bpe]") {
  auto v = bpe_tokenizer_test::smollm2_gguf();
  v.pre = "deepseek-coder";
  CATCH_CHECK_THAT(bpe_tokenizer_test::error_of([&] { BpeTokenizer::from_gguf(v); }),
                   Catch::Contains("tokenizer.ggml.pre 'deepseek-coder' is not supported"));
  v.pre = "";
  CATCH_CHECK_THAT(bpe_tokenizer_test::error_of([&] { BpeTokenizer::from_gguf(v); }),
                   Catch::Contains("tokenizer.ggml.pre '(missing"));
  v.pre = "smollm";
  v.model = "llama";
  v.architecture = "llama";
  CATCH_CHECK_THAT(bpe_tokenizer_test::error_of([&] { BpeTokenizer::from_gguf(v); }),
                   Catch::Contains("SentencePiece vocabulary (tokenizer.ggml.model 'llama') of architecture 'llama' "
                                   "is not supported"));
  v.model = "t5";
  CATCH_CHECK_THAT(bpe_tokenizer_test::error_of([&] { BpeTokenizer::from_gguf(v); }),
                   Catch::Contains("tokenizer.ggml.model 't5' is not supported"));
  v.model = "gpt2";
  v.merges.push_back("no such");
  CATCH_CHECK_THAT(bpe_tokenizer_test::error_of([&] { BpeTokenizer::from_gguf(v); }),
                   Catch::Contains("uses a token missing from the vocabulary ('nosuch')"));
}

CATCH_TEST_CASE("tokenizer.json features BPE does not implement are refused by name", "[bpe]") {
  const auto refused = [](const std::function<void(nlohmann::json&)>& change) {
    auto j = bpe_tokenizer_test::smollm2_json();
    change(j);
    return bpe_tokenizer_test::error_of([&] { BpeTokenizer::from_json(j, "tokenizer.json"); });
  };
  CATCH_CHECK_THAT(refused([](auto& j) { j["model"]["type"] = "WordPiece"; }),
                   Catch::Contains("tokenizer.json: model type 'WordPiece' is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["model"]["byte_fallback"] = "yes"; }),
                   Catch::Contains("BPE byte_fallback \"yes\" is not true or false"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["model"]["unk_token"] = "<nowhere>"; }),
                   Catch::Contains("BPE unk_token \"<nowhere>\" is not in the vocabulary"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["model"]["end_of_word_suffix"] = "</w>"; }),
                   Catch::Contains("BPE end_of_word_suffix \"</w>\" is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["model"]["dropout"] = 0.1; }),
                   Catch::Contains("BPE dropout 0.1 is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["model"]["continuing_subword_prefix"] = "##"; }),
                   Catch::Contains("BPE continuing_subword_prefix \"##\" is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["normalizer"] = {{"type", "Lowercase"}}; }),
                   Catch::Contains("normalizer {\"type\":\"Lowercase\"} is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) {
                     j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}};
                   }),
                   Catch::Contains("normalizer {\"content\":\"_\""));
  CATCH_CHECK_THAT(refused([](auto& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }),
                   Catch::Contains("pre_tokenizer type 'Whitespace' is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) {
                     j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s"}}}, {"behavior", "Removed"}};
                   }),
                   Catch::Contains("Split behavior 'Removed' is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["pre_tokenizer"]["pretokenizers"].erase(1); }),
                   Catch::Contains("the ByteLevel decoder does not fit a pre_tokenizer without ByteLevel"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Split"}, {"pattern", {{"Regex", "(("}}}, {"behavior", "Isolated"}}; }),
                   Catch::Contains("pattern '((' is not a valid PCRE2 regex"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["added_tokens"][0]["single_word"] = true; }),
                   Catch::Contains("added token '<|endoftext|>' has single_word true"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["decoder"] = nullptr; }),
                   Catch::Contains("decoder none is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "Fuse"}}}}}; }),
                   Catch::Contains("decoder {\"decoders\":[{\"type\":\"Fuse\"}],\"type\":\"Sequence\"} is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["post_processor"] = {{"type", "ChatMLProcessing"}}; }),
                   Catch::Contains("post_processor 'ChatMLProcessing' is not supported"));
  CATCH_CHECK_THAT(refused([](auto& j) { j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"</s>", 2}}}; }),
                   Catch::Contains("post_processor cls (missing) is not [token, id]"));
  // Ids that are numbers but not integers (a float cast to int64 was undefined behaviour; fuzzing).
  CATCH_CHECK_THAT(refused([](auto& j) { j["added_tokens"][0]["id"] = 1.4e118; }),
                   Catch::Contains("added token id must be an integer"));
  CATCH_CHECK_THAT(refused([](auto& j) {
                     j["post_processor"] = {{"type", "TemplateProcessing"},
                                            {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                                            {"special_tokens", {{"<s>", {{"ids", {2.5}}}}}}};
                   }),
                   Catch::Contains("post_processor id of <s> must be an integer"));
}

CATCH_TEST_CASE("added tokens with lstrip and rstrip swallow the whitespace around them", "[bpe]") {
  auto j = bpe_tokenizer_test::smollm2_json();
  j["added_tokens"][1]["lstrip"] = true;  // <|im_start|>
  j["added_tokens"][2]["rstrip"] = true;  // <|im_end|>
  const auto tokenizer = BpeTokenizer::from_json(j, "tokenizer.json");
  const auto& plain = bpe_tokenizer_test::smollm2();
  CATCH_CHECK(tokenizer.encode_text("a \t <|im_start|>b<|im_end|> \n c", false) ==
              [&] {
                auto ids = plain.encode_text("a", false);
                ids.push_back(1);
                for (auto id : plain.encode_text("b", false)) ids.push_back(id);
                ids.push_back(2);
                for (auto id : plain.encode_text("c", false)) ids.push_back(id);
                return ids;
              }());
}

CATCH_TEST_CASE("added tokens match in two passes, raw then normalized, as HF AddedVocabulary", "[bpe]") {
  // Expected ids from HF tokenizers 0.23.3 on the same tokenizer.json: "bc" (normalized false)
  // is found first; "ab" (normalized true) only in what is left. Both contents are in the
  // vocabulary (ab 369, bc 24334), whose ids they keep.
  auto j = bpe_tokenizer_test::smollm2_json();
  j["added_tokens"].push_back({{"id", 49152}, {"content", "ab"}, {"single_word", false}, {"lstrip", false},
                               {"rstrip", false}, {"normalized", true}, {"special", false}});
  j["added_tokens"].push_back({{"id", 49153}, {"content", "bc"}, {"single_word", false}, {"lstrip", false},
                               {"rstrip", false}, {"normalized", false}, {"special", false}});
  const auto tokenizer = BpeTokenizer::from_json(j, "tokenizer.json");
  CATCH_CHECK(tokenizer.encode_text("abc", false) == Ids{81, 24334});
  CATCH_CHECK(tokenizer.encode_text("xab bcd", false) == Ids{104, 369, 216, 24334, 84});
}
