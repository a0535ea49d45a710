// Tests of the BERT WordPiece tokenizer (models/tokenizer/wordpiece.h).
//
// The reference is HF tokenizers' BertTokenizerFast: tests/fixtures/minilm/tokens.json holds
// its output for all-MiniLM-L6-v2 on a set of hard texts, and the Unicode corner cases below
// were produced by it too (transformers 4.46.3, tokenizers 0.20.3).

#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "models/tokenizer/wordpiece.h"
#include "tests/test_support.h"

using headprune::Error;
using headprune::models::EncodedBatch;
using headprune::models::WordPieceOptions;
using headprune::models::WordPieceTokenizer;
using Catch::Matchers::Contains;

namespace {

// Ids: [UNK]=0 [CLS]=1 [SEP]=2 [PAD]=3 [MASK]=4, then the pieces in this order.
std::vector<std::string> tiny_vocab() {
  return {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "un", "##aff", "##able", "hello",
          "world", "!",     ",",     "a",     "##a",    "cafe", "café", "Cafe",  "—",
          "$",     "北",    "é",     "##é",   "x",      "##x",  "wor",  "##ld",  "##world"};
}

WordPieceTokenizer tiny(WordPieceOptions options = {}) {
  return WordPieceTokenizer(tiny_vocab(), std::move(options));
}

using Tokens = std::vector<std::string>;
using Ids = std::vector<int64_t>;

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// A checkpoint folder holding the tiny vocabulary (CRLF lines) and the given config files.
std::filesystem::path tiny_dir(const std::string& tag, const std::string& config,
                               const std::string& special_map = "") {
  auto dir = headprune::testing::temp_dir("tokenizer-" + tag);
  std::string vocab;
  for (const auto& token : tiny_vocab()) vocab += token + "\r\n";
  write_file(dir / "vocab.txt", vocab);
  if (!config.empty()) write_file(dir / "tokenizer_config.json", config);
  if (!special_map.empty()) write_file(dir / "special_tokens_map.json", special_map);
  return dir;
}

template <typename T>
std::string join(const std::vector<T>& values, std::size_t from, std::size_t count) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = from; i < values.size() && i < from + count; ++i) {
    if (i > from) out << ", ";
    out << nlohmann::json(values[i]).dump();
  }
  out << (from + count < values.size() ? ", ...]" : "]");
  return out.str();
}

/// "" if equal, else where and how `actual` first differs from `expected`.
template <typename T>
std::string first_difference(const std::vector<T>& expected, const std::vector<T>& actual) {
  std::size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  if (i == expected.size() && i == actual.size()) return "";
  std::ostringstream out;
  out << "first difference at position " << i << " (expected " << expected.size() << " items, got "
      << actual.size() << "): expected " << join(expected, i, 5) << ", got " << join(actual, i, 5);
  return out.str();
}

/// Checks `tokenizer` against the HF BertTokenizerFast fixture of MiniLM (tokens and ids).
void check_minilm_fixture(const WordPieceTokenizer& tokenizer) {
  const auto path = headprune::testing::fixture_path("minilm/tokens.json");
  std::ifstream in(path);
  CATCH_REQUIRE(in.good());
  auto fixture = nlohmann::json::parse(in);
  const auto max_length = fixture.at("max_length").get<std::size_t>();
  const auto& cases = fixture.at("cases");
  CATCH_REQUIRE(cases.size() > 0);

  std::size_t failures = 0;
  for (const auto& item : cases) {
    const auto text = item.at("text").get<std::string>();
    const auto expected_tokens = item.at("tokens").get<Tokens>();
    const auto expected_ids = item.at("input_ids").get<Ids>();
    auto diff = first_difference(expected_tokens, tokenizer.tokenize(text));
    if (!diff.empty()) {
      ++failures;
      CATCH_FAIL_CHECK("tokenize(" << nlohmann::json(text).dump() << "): " << diff);
    }
    diff = first_difference(expected_ids, tokenizer.encode(text, max_length));
    if (!diff.empty()) {
      ++failures;
      CATCH_FAIL_CHECK("encode(" << nlohmann::json(text).dump() << ", " << max_length
                                 << "): " << diff);
    }
  }
  CATCH_CHECK(failures == 0);
}

}  // namespace

CATCH_TEST_CASE("tokenizer matches HF BertTokenizerFast on the MiniLM fixture", "[tokenizer]") {
  check_minilm_fixture(WordPieceTokenizer::from_directory(headprune::testing::minilm_dir()));
}

CATCH_TEST_CASE("a folder with only tokenizer.json tokenizes as HF does", "[tokenizer]") {
  const auto dir = headprune::testing::temp_dir("tokenizer-json");
  std::filesystem::copy_file(headprune::testing::minilm_dir() / "tokenizer.json", dir / "tokenizer.json");
  const auto tokenizer = WordPieceTokenizer::from_directory(dir);
  CATCH_CHECK(tokenizer.vocab_size() == 30522);
  check_minilm_fixture(tokenizer);
}

CATCH_TEST_CASE("a tokenizer.json that is not BERT WordPiece is refused by name", "[tokenizer]") {
  const auto dir = headprune::testing::temp_dir("tokenizer-json-bpe");
  std::ifstream in(headprune::testing::minilm_dir() / "tokenizer.json");
  auto json = nlohmann::json::parse(in);
  json["model"]["type"] = "BPE";
  std::ofstream(dir / "tokenizer.json") << json.dump();
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(dir),
                          Catch::Contains("model 'BPE' is not supported"));
  json["model"]["type"] = "WordPiece";
  json["normalizer"] = {{"type", "NFC"}};
  std::ofstream(dir / "tokenizer.json") << json.dump();
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(dir),
                          Catch::Contains("normalizer 'NFC' is not supported"));
  json["normalizer"] = {{"type", "BertNormalizer"}, {"lowercase", true}};
  json["added_tokens"].push_back({{"id", 30522}, {"content", "<new>"}, {"special", false}});
  std::ofstream(dir / "tokenizer.json") << json.dump();
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(dir),
                          Catch::Contains("added token '<new>' (id 30522) is not the vocabulary's token of that id"));
}

CATCH_TEST_CASE("tokenizer loads the real MiniLM checkpoint", "[tokenizer]") {
  auto tokenizer = WordPieceTokenizer::from_directory(headprune::testing::minilm_dir());
  CATCH_CHECK(tokenizer.vocab_size() == 30522);
  CATCH_CHECK(tokenizer.pad_id() == 0);
  CATCH_CHECK(tokenizer.token_to_id("[UNK]") == 100);
  CATCH_CHECK(tokenizer.token_to_id("[CLS]") == 101);
  CATCH_CHECK(tokenizer.token_to_id("[SEP]") == 102);
  CATCH_CHECK(tokenizer.token_to_id("no-such-token") == 100);
  CATCH_CHECK(tokenizer.id_to_token(7592) == "hello");
  CATCH_CHECK(tokenizer.options().do_lower_case);
  CATCH_CHECK(tokenizer.options().tokenize_chinese_chars);
  CATCH_CHECK(tokenizer.options().strip_accents == -1);
  CATCH_CHECK(tokenizer.options().model_max_length == 512);
  CATCH_CHECK(tokenizer.encode("Hello, world!", 512) == Ids{101, 7592, 1010, 2088, 999, 102});
}

CATCH_TEST_CASE("tokenizer follows HF fast on Unicode corner cases", "[tokenizer]") {
  // Expected values from BertTokenizerFast (all-MiniLM-L6-v2); they exercise the places
  // where tokenizers' character classes differ from Python's or from current Unicode.
  auto tokenizer = WordPieceTokenizer::from_directory(headprune::testing::minilm_dir());
  struct Case {
    const char* text;
    Ids ids;
  };
  const std::vector<Case> cases = {
      // per-character lower-casing: no final sigma
      {"ΟΔΟΣ ΣΊΣΥΦΟΣ",
       {101, 1169, 29722, 29730, 29733, 1173, 18199, 29733, 29735, 29736, 29730, 29733, 102}},
      {"a\u2E43b", {101, 100, 102}},                 // punctuation since Unicode 9: not split
      {"a\u2E42b", {101, 1037, 100, 1038, 102}},     // punctuation in Unicode 8: split
      {"x\u166Dy", {101, 1060, 100, 1061, 102}},     // was Po in Unicode 8, So now: split
      {"\u0130stanbul", {101, 9960, 102}},           // İ: accents stripped before lower-casing
      {"line\u2028next", {101, 2240, 2279, 102}},    // U+2028 is whitespace
      {"nel\u0085x", {101, 11265, 2140, 2595, 102}},  // U+0085 is a control (dropped)
      {"a\x0b" "b", {101, 11113, 102}},              // \v too
      {"pu\uE000a", {101, 16405, 2050, 102}},        // private use is dropped
      {"un\u0378as", {101, 100, 102}},               // unassigned is kept
      {"z\u200Bw", {101, 1062, 2860, 102}},          // zero-width space (Cf) is dropped
      {"a\u0890b", {101, 100, 102}},                 // Cf since Unicode 14: kept
      {"\xEF\xAC\x81ne", {101, 1984, 2638, 102}},    // ligature ﬁ: NFD keeps it
      {"\U0002B820x\U0002B920", {101, 100, 100, 102}},  // CJK range starts at U+2B920
  };
  for (const auto& c : cases) {
    CATCH_INFO("text " << nlohmann::json(std::string(c.text)).dump());
    CATCH_CHECK(tokenizer.encode(c.text, 512) == c.ids);
  }

  WordPieceOptions keep_accents = tokenizer.options();
  keep_accents.strip_accents = 0;
  std::vector<std::string> vocab;
  for (std::size_t i = 0; i < tokenizer.vocab_size(); ++i)
    vocab.push_back(tokenizer.id_to_token(static_cast<int64_t>(i)));
  WordPieceTokenizer no_strip(std::move(vocab), keep_accents);
  CATCH_CHECK(no_strip.encode("\u0130stanbul", 512) == Ids{101, 100, 102});  // "i̇stanbul"
  CATCH_CHECK(no_strip.encode("ΟΔΟΣ", 512) == Ids{101, 1169, 29722, 29730, 29733, 102});
  CATCH_CHECK(no_strip.encode("a\u1ABFb", 512) == Ids{101, 100, 102});  // Mn since Unicode 13
}

CATCH_TEST_CASE("WordPiece splits words greedily with ## continuations", "[tokenizer]") {
  auto t = tiny();
  CATCH_CHECK(t.tokenize("unaffable") == Tokens{"un", "##aff", "##able"});
  CATCH_CHECK(t.tokenize("world") == Tokens{"world"});  // longest match first
  CATCH_CHECK(t.tokenize("helloworld") == Tokens{"hello", "##world"});
  CATCH_CHECK(t.tokenize("unaffablex") == Tokens{"un", "##aff", "##able", "##x"});
  // A word with a part that matches nothing becomes one [UNK], not partial pieces.
  CATCH_CHECK(t.tokenize("unaffableq hello") == Tokens{"[UNK]", "hello"});
  CATCH_CHECK(t.tokenize("qhello") == Tokens{"[UNK]"});
}

CATCH_TEST_CASE("words longer than 100 characters become [UNK]", "[tokenizer]") {
  auto t = tiny();
  auto pieces = t.tokenize(std::string(100, 'a'));
  CATCH_REQUIRE(pieces.size() == 100);
  CATCH_CHECK(pieces.front() == "a");
  CATCH_CHECK(pieces.back() == "##a");
  CATCH_CHECK(t.tokenize(std::string(101, 'a')) == Tokens{"[UNK]"});
  CATCH_CHECK(t.tokenize(std::string(101, 'a') + " hello") == Tokens{"[UNK]", "hello"});

  // The limit counts characters, not bytes: 100 "é" (200 bytes) is still one word.
  WordPieceOptions keep;
  keep.strip_accents = 0;
  auto k = tiny(keep);
  std::string e100;
  for (int i = 0; i < 100; ++i) e100 += "é";
  CATCH_CHECK(k.tokenize(e100).size() == 100);
  CATCH_CHECK(k.tokenize(e100 + "é") == Tokens{"[UNK]"});
}

CATCH_TEST_CASE("punctuation is split off and whitespace separates words", "[tokenizer]") {
  auto t = tiny();
  CATCH_CHECK(t.tokenize("hello,world!") == Tokens{"hello", ",", "world", "!"});
  CATCH_CHECK(t.tokenize("  hello\t\r\nworld  ") == Tokens{"hello", "world"});
  CATCH_CHECK(t.tokenize("hello\u00A0world\u3000a") == Tokens{"hello", "world", "a"});
  CATCH_CHECK(t.tokenize("hello\xE2\x80\x94world") == Tokens{"hello", "—", "world"});  // U+2014
  CATCH_CHECK(t.tokenize("$hello") == Tokens{"$", "hello"});  // ASCII symbols count as punctuation
  CATCH_CHECK(t.tokenize("!!,") == Tokens{"!", "!", ","});
  CATCH_CHECK(t.tokenize("hel\x01lo\x7F") == Tokens{"hello"});  // control characters vanish
  CATCH_CHECK(t.tokenize("").empty());
  CATCH_CHECK(t.tokenize(" \t\n").empty());
}

CATCH_TEST_CASE("CJK ideographs become single-character words", "[tokenizer]") {
  CATCH_CHECK(tiny().tokenize("a北a") == Tokens{"a", "北", "a"});
  WordPieceOptions no_cjk;
  no_cjk.tokenize_chinese_chars = false;
  CATCH_CHECK(tiny(no_cjk).tokenize("a北a") == Tokens{"[UNK]"});
}

CATCH_TEST_CASE("lower-casing and accent stripping follow the options", "[tokenizer]") {
  WordPieceOptions options;  // lower-case, strip_accents null -> strip
  CATCH_CHECK(tiny(options).tokenize("CAFÉ Café cafe\xCC\x81") == Tokens{"cafe", "cafe", "cafe"});
  options.strip_accents = 0;  // lower-case, keep accents
  CATCH_CHECK(tiny(options).tokenize("CAFÉ") == Tokens{"café"});
  options.do_lower_case = false;
  options.strip_accents = -1;  // cased, null -> keep accents
  CATCH_CHECK(tiny(options).tokenize("Café cafe") == Tokens{"[UNK]", "cafe"});
  options.strip_accents = 1;  // cased, strip
  CATCH_CHECK(tiny(options).tokenize("Café") == Tokens{"Cafe"});
}

CATCH_TEST_CASE("special tokens written in the text are kept whole", "[tokenizer]") {
  auto t = tiny();
  CATCH_CHECK(t.tokenize("hello [MASK] world") == Tokens{"hello", "[MASK]", "world"});
  CATCH_CHECK(t.tokenize("a[SEP]a") == Tokens{"a", "[SEP]", "a"});
  CATCH_CHECK(t.encode("[CLS]", 8) == Ids{1, 1, 2});
  // Matching is exact (case-sensitive, before normalization).
  CATCH_CHECK(t.tokenize("[mask]") == Tokens{"[UNK]", "[UNK]", "[UNK]"});
}

CATCH_TEST_CASE("encode adds [CLS]/[SEP] and truncates to max_length", "[tokenizer]") {
  auto t = tiny();
  CATCH_CHECK(t.encode("hello world", 16) == Ids{1, 8, 9, 2});
  CATCH_CHECK(t.encode("hello world !", 4) == Ids{1, 8, 9, 2});
  CATCH_CHECK(t.encode("unaffable", 3) == Ids{1, 5, 2});  // truncation may cut inside a word
  CATCH_CHECK(t.encode("hello", 2) == Ids{1, 2});
  CATCH_CHECK(t.encode("", 2) == Ids{1, 2});
  CATCH_CHECK_THROWS_AS(t.encode("hello", 1), Error);
}

CATCH_TEST_CASE("encode_batch right-pads with the pad id", "[tokenizer]") {
  auto t = tiny();
  EncodedBatch b = t.encode_batch({"hello world !", "a", "", "hello hello hello hello"}, 5);
  CATCH_REQUIRE(b.batch == 4);
  CATCH_REQUIRE(b.seq == 5);
  CATCH_CHECK(b.input_ids == Ids{1, 8, 9, 10, 2,   //
                                 1, 12, 2, 3, 3,   //
                                 1, 2, 3, 3, 3,    //
                                 1, 8, 8, 8, 2});
  CATCH_CHECK(b.attention_mask == Ids{1, 1, 1, 1, 1,  //
                                      1, 1, 1, 0, 0,  //
                                      1, 1, 0, 0, 0,  //
                                      1, 1, 1, 1, 1});
  CATCH_CHECK(b.token_type_ids == Ids(20, 0));

  EncodedBatch short_rows = t.encode_batch({"a", "a a"}, 64);
  CATCH_CHECK(short_rows.seq == 4);  // padded to the longest row, not to max_length
  EncodedBatch empty = t.encode_batch({}, 8);
  CATCH_CHECK(empty.batch == 0);
  CATCH_CHECK(empty.input_ids.empty());
}

CATCH_TEST_CASE("invalid UTF-8 is rejected with its byte offset", "[tokenizer]") {
  auto t = tiny();
  CATCH_CHECK_THROWS_WITH(t.tokenize("ab\xC3("), Contains("byte offset 2"));
  CATCH_CHECK_THROWS_WITH(t.tokenize("\xFF"), Contains("byte offset 0"));
  CATCH_CHECK_THROWS_WITH(t.tokenize("abc\xC0\xAF"), Contains("byte offset 3"));      // overlong
  CATCH_CHECK_THROWS_WITH(t.tokenize("a\xED\xA0\x80"), Contains("byte offset 1"));    // surrogate
  CATCH_CHECK_THROWS_WITH(t.encode("héllo\xE2\x82", 8), Contains("byte offset 6"));  // truncated
  CATCH_CHECK_THROWS_AS(t.encode_batch({"ok", "\x80"}, 8), Error);
}

CATCH_TEST_CASE("vocabulary lookups and constructor errors", "[tokenizer]") {
  auto t = tiny();
  CATCH_CHECK(t.vocab_size() == tiny_vocab().size());
  CATCH_CHECK(t.pad_id() == 3);
  CATCH_CHECK(t.token_to_id("##able") == 7);
  CATCH_CHECK(t.token_to_id("missing") == 0);
  CATCH_CHECK(t.id_to_token(8) == "hello");
  CATCH_CHECK_THROWS_AS(t.id_to_token(-1), Error);
  CATCH_CHECK_THROWS_AS(t.id_to_token(static_cast<int64_t>(tiny_vocab().size())), Error);

  auto vocab = tiny_vocab();
  vocab[4] = "[MASKED]";
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer(vocab, {}), Contains("[MASK]"));
  WordPieceOptions options;
  options.unk_token = "<unk>";
  CATCH_CHECK_THROWS_WITH(tiny(options), Contains("<unk>"));
}

CATCH_TEST_CASE("from_directory reads vocab.txt and the config files", "[tokenizer]") {
  auto dir = tiny_dir("config",
                      R"({"do_lower_case": false, "tokenize_chinese_chars": false,
                          "strip_accents": true, "model_max_length": 128,
                          "unk_token": {"content": "[UNK]", "lstrip": false},
                          "mask_token": "[MASK]"})");
  auto t = WordPieceTokenizer::from_directory(dir);
  CATCH_CHECK(t.vocab_size() == tiny_vocab().size());  // CRLF stripped, no empty last token
  CATCH_CHECK(t.token_to_id("##world") == 26);
  CATCH_CHECK_FALSE(t.options().do_lower_case);
  CATCH_CHECK_FALSE(t.options().tokenize_chinese_chars);
  CATCH_CHECK(t.options().strip_accents == 1);
  CATCH_CHECK(t.options().model_max_length == 128);
  CATCH_CHECK(t.tokenize("Café") == Tokens{"Cafe"});

  // HF writes model_max_length 1e30 for "no limit"; special_tokens_map.json overrides.
  auto dir2 = tiny_dir("map", R"({"strip_accents": null, "model_max_length": 1e30,
                                  "pad_token": "[PAD]"})",
                       R"({"pad_token": {"content": "[MASK]"}})");
  auto t2 = WordPieceTokenizer::from_directory(dir2);
  CATCH_CHECK(t2.options().strip_accents == -1);
  CATCH_CHECK(t2.options().model_max_length == std::numeric_limits<std::size_t>::max());
  CATCH_CHECK(t2.pad_id() == 4);

  // Without tokenizer_config.json the HF defaults apply.
  auto t3 = WordPieceTokenizer::from_directory(tiny_dir("defaults", ""));
  CATCH_CHECK(t3.options().do_lower_case);
  CATCH_CHECK(t3.options().strip_accents == -1);
  CATCH_CHECK(t3.tokenize("CAFÉ") == Tokens{"cafe"});

  // Only the line break is stripped from vocab.txt lines: other whitespace is kept.
  auto dir4 = headprune::testing::temp_dir("tokenizer-spaces");
  write_file(dir4 / "vocab.txt", "[UNK]\n[CLS]\n[SEP]\n[PAD]\n[MASK]\n tab\t\nlast");
  auto t4 = WordPieceTokenizer::from_directory(dir4);
  CATCH_CHECK(t4.vocab_size() == 7);
  CATCH_CHECK(t4.token_to_id(" tab\t") == 5);
  CATCH_CHECK(t4.token_to_id("last") == 6);
}

CATCH_TEST_CASE("from_directory errors name the file and the fix", "[tokenizer]") {
  auto empty = headprune::testing::temp_dir("tokenizer-empty");
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(empty), Contains("vocab.txt"));

  auto bad_json = tiny_dir("badjson", R"({"do_lower_case": true,)");
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(bad_json),
                          Contains("tokenizer_config.json") && Contains("malformed JSON"));

  auto bad_map = tiny_dir("badmap", "{}", "[1, 2");
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(bad_map),
                          Contains("special_tokens_map.json") && Contains("malformed JSON"));

  auto missing = tiny_dir("missing", R"({"unk_token": "<unk>"})");
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(missing),
                          Contains("<unk>") && Contains("not in the vocabulary"));

  auto wrong_type = tiny_dir("type", R"({"do_lower_case": "yes"})");
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(wrong_type),
                          Contains("tokenizer_config.json") && Contains("do_lower_case"));

  auto bad_token = tiny_dir("token", R"({"cls_token": 5})");
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(bad_token), Contains("cls_token"));

  auto bad_length = tiny_dir("length", R"({"model_max_length": -3})");
  CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(bad_length),
                          Contains("model_max_length"));

  // Keys that would change encoding and are not implemented are refused by name.
  for (const auto* config : {R"({"wordpieces_prefix": "@@"})", R"({"never_split": ["[FOO]"]})",
                             R"({"tokenizer_class": "RobertaTokenizer"})",
                             R"({"do_basic_tokenize": false})", R"({"truncation_side": "left"})",
                             R"({"added_tokens_decoder": {"30522": {"content": "<new>"}}})"}) {
    CATCH_INFO(config);
    const auto key = nlohmann::json::parse(config).begin().key();
    CATCH_CHECK_THROWS_WITH(WordPieceTokenizer::from_directory(tiny_dir("refused", config)),
                            Contains("tokenizer_config.json") && Contains(key));
  }
  auto specials_only = tiny_dir("specials", R"({"added_tokens_decoder": {"0": {"content": "[UNK]"}}})");
  CATCH_CHECK_NOTHROW(WordPieceTokenizer::from_directory(specials_only));
}

CATCH_TEST_CASE("a megabyte of text gives exactly its pieces, an over-long word one [UNK]", "[tokenizer]") {
  // What it checks is the output; tokenizer speed is a benchmark's business, not a test's.
  auto t = tiny();
  std::string text;
  std::size_t pieces = 0;
  while (text.size() < (1u << 20)) {
    text += "unaffable hello, ";  // un ##aff ##able hello ,
    pieces += 5;
  }
  text += std::string(5000, 'a');  // and one very long "word"
  auto ids = t.encode(text, std::numeric_limits<std::size_t>::max());
  CATCH_CHECK(ids.size() == pieces + 1 + 2);  // + [UNK] + [CLS] [SEP]
}
