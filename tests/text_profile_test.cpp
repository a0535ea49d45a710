// The calibration text's profile and its warnings (issue 17, item 6), with MiniLM's real
// tokenizer. Expected values are counted by hand from the sequences and strings below.
#include <cmath>
#include <fstream>

#include "models/checkpoint.h"
#include "models/loader.h"
#include "pruner/text/corpus.h"
#include "pruner/text/text_profile.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace headprune;
using Catch::Matchers::Contains;

namespace {

/// MiniLM's (bert-base-uncased) ids: [CLS] 101, [SEP] 102, [UNK] 100; "hello" 7592, "world" 2088.
constexpr int64_t kCls = 101, kSep = 102, kUnk = 100, kHello = 7592, kWorld = 2088;

pruner::TextProfile good_profile() {
  pruner::TextProfile p;
  p.documents = 2000;
  p.train_sequences = 1800;
  p.median_tokens = 40;
  p.unknown_share = 0.001;
  p.letter_share = 0.9;
  p.distinct_share = 1.0;
  return p;
}

}  // namespace

CATCH_TEST_CASE("a text profile counts what the sequences and text hold", "[text]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const std::vector<std::vector<int64_t>> train = {
      {kCls, kHello, kSep},                      // 3 tokens, 1 from the text
      {kCls, kUnk, kUnk, kHello, kSep},          // 5 tokens, 3 from the text, 2 unknown
      {kCls, kHello, kWorld, kHello, kSep},      // 5, at the length limit below
      {kCls, kHello, kWorld, kHello, kSep}};     // a repeat
  // Visible characters: "ab 12" a b 1 2 (2 letters of 4); "é, x\t!" é , x ! (2 of 4).
  const auto p = pruner::profile_text(train, {"ab 12", "\xc3\xa9, x\t!"}, 7, *ckpt.tokenizer, 5);
  CATCH_CHECK(p.documents == 7);
  CATCH_CHECK(p.train_sequences == 4);
  CATCH_CHECK(p.train_tokens == 18);
  CATCH_CHECK(p.median_tokens == 5);            // 3 5 5 5
  CATCH_CHECK(p.truncated_share == 0.75);       // three reach 5 tokens
  CATCH_CHECK(p.unknown_share == 2.0 / 10.0);   // 1 + 3 + 3 + 3 text tokens
  CATCH_CHECK(p.distinct_share == 0.75);
  CATCH_CHECK(p.letter_share == 0.5);
  const auto even = pruner::profile_text({{kCls, kSep}, {kCls, kHello, kSep}}, {}, 2, *ckpt.tokenizer, 128);
  CATCH_CHECK(even.median_tokens == 2.5);
  CATCH_CHECK(std::isnan(even.letter_share));   // nothing held out: unknown, and no warning
  CATCH_CHECK(pruner::text_warnings(even).size() == 2);  // short text, short documents
  CATCH_CHECK(even.to_json()["letter_share"].is_null());
}

CATCH_TEST_CASE("each text limit warns alone, saying what was measured", "[text]") {
  CATCH_CHECK(pruner::text_warnings(good_profile()).empty());
  auto check = [](auto change, const char* words) {
    auto p = good_profile();
    change(p);
    const auto w = pruner::text_warnings(p);
    CATCH_REQUIRE(w.size() == 1);
    CATCH_CHECK_THAT(w[0], Contains(words));
  };
  check([](auto& p) { p.train_sequences = 120; }, "short: 120 training sequences");
  check([](auto& p) { p.median_tokens = 5; }, "median 5 tokens");
  check([](auto& p) { p.unknown_share = 0.05; }, "5.0% of the calibration tokens are unknown");
  check([](auto& p) { p.letter_share = 0.4; }, "only 40% of the calibration text's characters are letters");
  check([](auto& p) { p.distinct_share = 0.5; }, "50% of the calibration sequences are repeats");
}

CATCH_TEST_CASE("load_corpus profiles the text it read", "[text]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const auto dir = testing::temp_dir("text-profile");
  {
    std::ofstream f(dir / "t.txt");
    for (int i = 0; i < 20; ++i) f << "hello world number " << i << "\n";
    f << "hello world number 0\n";  // a repeat of a line (it may land in either share)
  }
  pruner::CorpusOptions o;
  const auto corpus = pruner::load_corpus({dir / "t.txt"}, *ckpt.tokenizer, o);
  CATCH_CHECK(corpus.profile.documents == 21);
  CATCH_CHECK(corpus.profile.train_sequences == corpus.train.size());
  CATCH_CHECK(corpus.profile.median_tokens == 6);  // [CLS] hello world number N [SEP]
  CATCH_CHECK(corpus.profile.unknown_share == 0);
  CATCH_CHECK_THAT(pruner::text_warnings(corpus.profile)[0], Contains("short"));
}
