// Tests of the SentencePiece-style (Gemma) flavour of the BPE tokenizer
// (models/tokenizer/spm_from_gguf.cpp, bpe_tokenizer.h).
//
// The reference is transformers 5.24's GemmaTokenizer built from a GGUF: tests/fixtures/
// gemma3_tokenizer/ holds a real subset of Gemma 3 270M's GGUF vocabulary (tokenizer.gguf), the
// tokenizer.json transformers built from it and saved, and its ids and decodings of 294 texts
// (hard cases, chat turns, byte-fallback characters, WikiText-2 lines); tools/make_spm_fixtures.py
// wrote them.

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/errors.h"
#include "models/formats/gguf.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/gguf_tokenizer.h"
#include "tests/test_support.h"

namespace spm_tokenizer_test {

using headprune::models::BpeTokenizer;
using headprune::models::GgufVocabulary;
using Ids = std::vector<int64_t>;

std::filesystem::path fixture(const std::string& name) {
  return headprune::testing::fixture_path("gemma3_tokenizer/" + name);
}

nlohmann::json read_json(const std::filesystem::path& file) { return headprune::models::read_json_file(file); }

const nlohmann::json& cases() {
  static const auto j = read_json(fixture("encodings.json")).at("cases");
  return j;
}

GgufVocabulary vocabulary() {
  return headprune::models::read_gguf_vocabulary(headprune::models::read_gguf(fixture("tokenizer.gguf")));
}

const BpeTokenizer& from_gguf() {
  static const auto tokenizer = BpeTokenizer::from_gguf(vocabulary());
  return tokenizer;
}

/// Checks `tokenizer` against every fixture text's ids and decodings.
void check_cases(const BpeTokenizer& tokenizer) {
  for (const auto& c : cases()) {
    const auto text = c.at("text").get<std::string>();
    CATCH_INFO("text " << nlohmann::json(text).dump());
    const auto ids = c.at("ids").get<Ids>();
    CATCH_CHECK(tokenizer.encode_text(text, true) == ids);
    CATCH_CHECK(tokenizer.decode(ids, false) == c.at("decoded").get<std::string>());
    CATCH_CHECK(tokenizer.decode(ids, true) == c.at("decoded_skip").get<std::string>());
  }
}

/// The added tokens of a tokenizer.json as "id content special normalized", sorted.
std::vector<std::string> added_tokens(const nlohmann::json& tokenizer) {
  std::set<std::pair<int64_t, std::string>> sorted;
  for (const auto& t : tokenizer.at("added_tokens"))
    sorted.emplace(t.at("id").get<int64_t>(), t.at("content").get<std::string>() + " " + t.at("special").dump() +
                                                  " " + t.at("normalized").dump());
  std::vector<std::string> out;
  for (const auto& [id, rest] : sorted) out.push_back(std::to_string(id) + " " + rest);
  return out;
}

}  // namespace spm_tokenizer_test

using headprune::models::BpeTokenizer;

CATCH_TEST_CASE("a Gemma GGUF vocabulary encodes and decodes as transformers' GemmaTokenizer of it", "[spm]") {
  const auto& tokenizer = spm_tokenizer_test::from_gguf();
  spm_tokenizer_test::check_cases(tokenizer);
  CATCH_CHECK(tokenizer.pad_id() == 0);
  CATCH_CHECK(tokenizer.bos_id() == 2);
  CATCH_CHECK(tokenizer.end_of_text_ids() == spm_tokenizer_test::Ids{1});
  CATCH_CHECK(tokenizer.is_special(2));
  CATCH_CHECK(tokenizer.prompt_ids("hi").front() == 2);
}

CATCH_TEST_CASE("the Gemma tokenizer.json written equals transformers' saved one: vocab, merges, added tokens", "[spm]") {
  const auto ours = spm_tokenizer_test::from_gguf().to_tokenizer_json();
  const auto theirs = spm_tokenizer_test::read_json(spm_tokenizer_test::fixture("tokenizer.json"));
  CATCH_CHECK(ours.at("model").at("vocab") == theirs.at("model").at("vocab"));
  CATCH_REQUIRE(ours.at("model").at("merges").size() == theirs.at("model").at("merges").size());
  CATCH_CHECK(ours.at("model").at("merges") == theirs.at("model").at("merges"));  // order is the rank
  for (const char* key : {"unk_token", "byte_fallback", "fuse_unk", "dropout"})
    CATCH_CHECK(ours.at("model").at(key) == theirs.at("model").at(key));
  for (const char* key : {"normalizer", "pre_tokenizer", "decoder", "post_processor"}) {
    CATCH_INFO(key);
    CATCH_CHECK(ours.at(key) == theirs.at(key));
  }
  CATCH_CHECK(spm_tokenizer_test::added_tokens(ours) == spm_tokenizer_test::added_tokens(theirs));
}

CATCH_TEST_CASE("transformers' saved Gemma tokenizer.json reads back with the same ids", "[spm]") {
  const auto tokenizer = BpeTokenizer::from_tokenizer_json(spm_tokenizer_test::fixture("tokenizer.json"));
  spm_tokenizer_test::check_cases(tokenizer);
  CATCH_CHECK(tokenizer.pad_id() == 0);
}

CATCH_TEST_CASE("Gemma GGUF vocabularies headprune cannot build exactly are refused by name", "[spm]") {
  auto v = spm_tokenizer_test::vocabulary();
  v.architecture = "llama";
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_gguf(v),
                          Catch::Contains("of architecture 'llama' is not supported (Gemma's only"));
  v = spm_tokenizer_test::vocabulary();
  v.unk_id = -1;
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_gguf(v),
                          Catch::Contains("tokenizer.ggml.unknown_token_id (missing) is not a token"));
  v = spm_tokenizer_test::vocabulary();
  v.merges.push_back("a b");
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_gguf(v),
                          Catch::Contains("tokenizer.ggml.merges in a Gemma SentencePiece vocabulary is not modelled"));
  v = spm_tokenizer_test::vocabulary();
  v.tokens.at(4) = "<nomask>";  // transformers would add "<mask>" as a new token
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_gguf(v),
                          Catch::Contains("special token '<mask>' is not in the vocabulary"));
}

CATCH_TEST_CASE("byte fallback spells a character the vocabulary lacks as its UTF-8 bytes, else unk", "[spm]") {
  const auto& tokenizer = spm_tokenizer_test::from_gguf();
  const auto id = [&](const std::string& token) { return *tokenizer.token_to_id(token); };
  // U+10348 (Gothic hwair) is not in the subset: F0 90 8D 88, each byte its own token.
  CATCH_CHECK(tokenizer.encode_text("\xF0\x90\x8D\x88", false) ==
              spm_tokenizer_test::Ids{id("<0xF0>"), id("<0x90>"), id("<0x8D>"), id("<0x88>")});
  CATCH_CHECK(tokenizer.decode({id("<0xF0>"), id("<0x90>"), id("<0x8D>"), id("<0x88>")}) == "\xF0\x90\x8D\x88");
  // An invalid byte run decodes as one U+FFFD per byte (HF ByteFallback).
  CATCH_CHECK(tokenizer.decode({id("<0xF0>"), id("<0x90>")}) == "\xEF\xBF\xBD\xEF\xBF\xBD");

  // Without a <0xF0> token the character is unknown; two in a row fuse into one unk (fuse_unk).
  auto v = spm_tokenizer_test::vocabulary();
  const auto f0 = static_cast<std::size_t>(id("<0xF0>"));
  v.tokens.at(f0) = "<0xF0-renamed>";
  const auto without = BpeTokenizer::from_gguf(v);
  const int64_t unk = 3;
  CATCH_CHECK(without.encode_text("\xF0\x90\x8D\x88\xF0\x90\x8D\x88", false) == spm_tokenizer_test::Ids{unk});
  CATCH_CHECK(without.encode_text("a\xF0\x90\x8D\x88", false) == spm_tokenizer_test::Ids{id("a"), unk});
}
