// Tests of the SentencePiece Unigram tokenizer (models/tokenizer/unigram_tokenizer.h,
// unigram_model.h, precompiled_charsmap.h) against HF `tokenizers` 0.23 as transformers 5.24's
// XLMRobertaTokenizer runs it.
//
// tests/fixtures/xlm_roberta/ (tools/make_encoder_fixtures.py xlm_roberta): a Unigram vocabulary
// of 3,000 pieces that sentencepiece trained with its nmt_nfkc rules (fairseq's layout, as
// XLM-R's sentencepiece.bpe.model) on real text in nine languages (Debian's fortunes in German,
// Spanish, Italian, Russian, Czech, Polish, Bulgarian, Portuguese and Chinese) and WikiText-2,
// converted by transformers' XLMRobertaConverter into tokenizer.json (Precompiled normalizer,
// WhitespaceSplit + Metaspace, <s> $A </s>), and the ids transformers gives 323 texts: held-out
// lines of those languages (characters outside the vocabulary among them) and hard cases (NFKC
// folds, half-width kana, combining marks, grapheme clusters, zero-width characters, scripts not
// in the training text, runs of spaces, added tokens).
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/errors.h"
#include "models/tokenizer/unigram_tokenizer.h"
#include "tests/test_support.h"

namespace unigram_tokenizer_test {

using headprune::models::UnigramTokenizer;
using Ids = std::vector<int64_t>;

std::filesystem::path fixture(const std::string& name) {
  return headprune::testing::fixture_path("xlm_roberta/" + name);
}

const nlohmann::json& tokenizer_json() {
  static const auto j = headprune::models::read_json_file(fixture("tokenizer.json"));
  return j;
}

/// The fixture's tokenizer.json with `edit` applied, loaded (or throwing).
UnigramTokenizer edited(const std::function<void(nlohmann::json&)>& edit) {
  auto j = tokenizer_json();
  edit(j);
  return UnigramTokenizer::from_json(j, "edited tokenizer.json");
}

}  // namespace unigram_tokenizer_test

using namespace unigram_tokenizer_test;

CATCH_TEST_CASE("Unigram: XLM-R-style tokenizer.json gives transformers' ids on multilingual text and hard cases",
                "[tokenizer][unigram]") {
  const auto tokenizer = UnigramTokenizer::from_tokenizer_json(fixture("tokenizer.json"));
  const auto encodings = headprune::models::read_json_file(fixture("encodings.json"));
  CATCH_REQUIRE(encodings.at("cases").size() > 300);
  std::size_t unknown = 0;
  for (const auto& c : encodings.at("cases")) {
    const auto text = c.at("text").get<std::string>();
    const auto expected = c.at("ids").get<Ids>();
    CATCH_INFO(text);
    CATCH_CHECK(tokenizer.encode(text, 512) == expected);
    unknown += static_cast<std::size_t>(std::count(expected.begin(), expected.end(), 3));
  }
  CATCH_CHECK(unknown > 20);  // the unknown-character path (fused <unk>) is exercised
  CATCH_CHECK(tokenizer.pad_id() == 1);
  CATCH_CHECK(tokenizer.is_special(0));
  CATCH_CHECK(tokenizer.token_text(3001) == "<mask>");
}

CATCH_TEST_CASE("Unigram: the Precompiled normalizer folds as SentencePiece's nmt_nfkc, graphemes as HF",
                "[tokenizer][unigram]") {
  const auto tokenizer = UnigramTokenizer::from_tokenizer_json(fixture("tokenizer.json"));
  CATCH_CHECK(tokenizer.normalize("ＡＢＣ １２３") == "ABC 123");
  CATCH_CHECK(tokenizer.normalize("\xEF\xAC\x81") == "fi");  // U+FB01 LATIN SMALL LIGATURE FI
  // U+FF76 U+FF9E: one grapheme of 6 bytes, so HF folds each character alone: U+30AB + U+3099
  // (not the precomposed U+30AC its grapheme entry gives).
  CATCH_CHECK(tokenizer.normalize("\xEF\xBD\xB6\xEF\xBE\x9E") == "\xE3\x82\xAB\xE3\x82\x99");
  CATCH_CHECK(tokenizer.pre_tokenize("  two  words ") == std::vector<std::string>{"\u2581two", "\u2581words"});
}

CATCH_TEST_CASE("Unigram: malformed or unsupported tokenizer.json is refused with one line naming it",
                "[tokenizer][unigram]") {
  const auto refused = [](const std::function<void(nlohmann::json&)>& edit, const std::string& what) {
    CATCH_INFO(what);
    CATCH_CHECK_THROWS_WITH(edited(edit), Catch::Contains(what));
  };
  refused([](auto& j) { j["model"]["vocab"][7][1] = "high"; }, "Unigram vocabulary entry 7 of");
  refused([](auto& j) { j["model"]["vocab"][8] = nlohmann::json::array({"x"}); }, "is not [piece, score]");
  refused([](auto& j) { j["model"]["vocab"][9][0] = j["model"]["vocab"][10][0]; }, "appears twice");
  refused([](auto& j) { j["model"]["unk_id"] = 5000; }, "unk_id 5000 is outside the vocabulary of 3002");
  refused([](auto& j) { j["model"]["byte_fallback"] = true; }, "byte_fallback true is not supported");
  refused([](auto& j) { j["model"]["min_score"] = -20.0; }, "Unigram model key 'min_score' is not modelled");
  refused([](auto& j) { j["normalizer"]["precompiled_charsmap"] = "not base64!"; }, "is not base64");
  refused([](auto& j) { j["normalizer"]["precompiled_charsmap"] = "AAAAAA=="; }, "trie size 0 does not fit");
  refused([](auto& j) { j["normalizer"] = {{"type", "NFKC"}}; }, "normalizer {\"type\":\"NFKC\"} is not supported");
  refused([](auto& j) { j["pre_tokenizer"]["pretokenizers"][1]["prepend_scheme"] = "first"; },
          "prepend_scheme 'first' is not supported");
  refused([](auto& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "pre_tokenizer {\"type\":\"Whitespace\"}");
  refused([](auto& j) { j["decoder"] = {{"type", "ByteLevel"}}; }, "decoder 'ByteLevel' is not supported");
  refused([](auto& j) { j["post_processor"]["special_tokens"]["</s>"]["ids"][0] = 9999; },
          "post_processor adds id 9999");
  refused([](auto& j) { j["added_tokens"][4]["single_word"] = true; }, "single_word true");
  // Without an unk_id, a character no piece covers cannot be encoded.
  const auto no_unk = edited([](auto& j) { j["model"]["unk_id"] = nullptr; });
  CATCH_CHECK_THROWS_WITH(no_unk.encode("\xE2\x98\x83", 16), Catch::Contains("no piece for"));  // U+2603 SNOWMAN
}
