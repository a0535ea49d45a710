// Tests of the SentencePiece-style (Gemma) flavour of the BPE tokenizer
// (models/tokenizer/spm_from_gguf.cpp, bpe_tokenizer.h).
//
// The reference is transformers 5.24's GemmaTokenizer built from a GGUF: tests/fixtures/
// gemma3_tokenizer/ holds a real subset of Gemma 3 270M's GGUF vocabulary (tokenizer.gguf), the
// tokenizer.json transformers built from it and saved, and its ids and decodings of 294 texts
// (hard cases, chat turns, byte-fallback characters, WikiText-2 lines); tools/make_spm_fixtures.py
// wrote them.
//
// "[llama-spm]": the LLaMA-style flavour (LLaMA 2, Mistral, Phi-3 tokenizer.json): tests/fixtures/
// mistral_tokenizer/ holds Mistral 7B v0.1's real vocabulary as transformers' LlamaConverter
// writes it (legacy: Prepend + Replace normalizer), the non-legacy pipeline's normalizer and
// Metaspace pre-tokenizer, and both pipelines' ids and decodings of the same 294 texts by the
// `tokenizers` library (tools/make_llama_spm_fixtures.py).

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

/// The Mistral fixture: its legacy tokenizer.json, or the non-legacy one (normalizer and
/// pre_tokenizer swapped for those encodings.json records).
nlohmann::json mistral_json(bool legacy) {
  const auto dir = headprune::testing::fixture_path("mistral_tokenizer");
  auto j = read_json(dir / "tokenizer.json");
  if (!legacy)
    for (const char* key : {"normalizer", "pre_tokenizer"})
      j[key] = read_json(dir / "encodings.json").at("non_legacy").at(key);
  return j;
}

BpeTokenizer mistral(bool legacy) {
  const auto dir = headprune::testing::fixture_path("mistral_tokenizer");
  return BpeTokenizer::from_json(mistral_json(legacy), "mistral tokenizer.json",
                                 read_json(dir / "tokenizer_config.json"));
}

}  // namespace spm_tokenizer_test

using headprune::models::BpeTokenizer;

CATCH_TEST_CASE("Mistral's SentencePiece tokenizer.json, legacy and not, encodes and decodes as HF tokenizers",
                "[spm][llama-spm]") {
  const auto cases = spm_tokenizer_test::read_json(
      headprune::testing::fixture_path("mistral_tokenizer/encodings.json")).at("cases");
  for (const bool legacy : {true, false}) {
    const auto tokenizer = spm_tokenizer_test::mistral(legacy);
    const char* key = legacy ? "legacy" : "non_legacy";
    for (const auto& c : cases) {
      const auto text = c.at("text").get<std::string>();
      CATCH_INFO(key << " text " << nlohmann::json(text).dump());
      const auto& ref = c.at(key);
      const auto ids = ref.at("ids").get<spm_tokenizer_test::Ids>();
      CATCH_CHECK(tokenizer.encode_text(text, true) == ids);
      CATCH_CHECK(tokenizer.decode(ids, false) == ref.at("decoded").get<std::string>());
      CATCH_CHECK(tokenizer.decode(ids, true) == ref.at("decoded_skip").get<std::string>());
    }
    CATCH_CHECK(tokenizer.bos_id() == 1);
    CATCH_CHECK(tokenizer.end_of_text_ids() == spm_tokenizer_test::Ids{2});
    // What headprune writes is the same pipeline.
    const auto ours = tokenizer.to_tokenizer_json();
    const auto theirs = spm_tokenizer_test::mistral_json(legacy);
    for (const char* section : {"normalizer", "pre_tokenizer", "decoder"}) {
      CATCH_INFO(section);
      CATCH_CHECK(ours.at(section) == theirs.at(section));
    }
  }
}

CATCH_TEST_CASE("LLaMA-style SentencePiece pipelines headprune does not model are refused by name", "[spm][llama-spm]") {
  auto j = spm_tokenizer_test::mistral_json(false);
  j["pre_tokenizer"]["split"] = true;
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_json(j, "t"), Catch::Contains("pre_tokenizer Metaspace with split true"));
  j = spm_tokenizer_test::mistral_json(false);
  j["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_json(j, "t"), Catch::Contains("prepend_scheme 'sometimes'"));
  j = spm_tokenizer_test::mistral_json(true);
  j["decoder"]["decoders"][3]["start"] = 2;
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_json(j, "t"), Catch::Contains("decoder") && Catch::Contains("Strip"));
  j = spm_tokenizer_test::mistral_json(true);
  j["normalizer"]["normalizers"][0]["prepend"] = "_";
  CATCH_CHECK_THROWS_WITH(BpeTokenizer::from_json(j, "t"), Catch::Contains("normalizer") && Catch::Contains("Prepend"));
}

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
