// STS-B evaluation: Spearman against sentence-transformers' own evaluation of the same file.
// Reference: tests/fixtures/minilm/sts_dev_reference.json (tools/sts_reference.py).
// Tolerance: ±0.05 Spearman points (issue 6).
#include <fstream>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/measure/sts.h"
#include "tests/test_support.h"

using namespace headprune;

CATCH_TEST_CASE("spearman uses average ranks for ties", "[sts]") {
  CATCH_CHECK(pruner::spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1.0));
  CATCH_CHECK(pruner::spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
  // scipy.stats.spearmanr([1, 2, 2, 3], [1, 3, 2, 4]).correlation == 0.9486832980505138
  CATCH_CHECK(pruner::spearman({1, 2, 2, 3}, {1, 3, 2, 4}) == Approx(0.9486832980505138).epsilon(1e-12));
  CATCH_CHECK_THROWS_AS(pruner::spearman({1}, {1}), headprune::Error);
}

CATCH_TEST_CASE("STS files are read by the format's rules and bad lines are named", "[sts]") {
  auto dir = testing::temp_dir("sts");
  std::ofstream(dir / "ok.tsv") << "g\tf\ty\t1\t4.5\tA man runs.\tA person \"runs\".\n"
                                << "g\tf\ty\t2\t0.0\tx\ty\textra1\textra2\r\n\n";
  auto pairs = pruner::read_sts(dir / "ok.tsv");
  CATCH_REQUIRE(pairs.size() == 2);
  CATCH_CHECK(pairs[0].score == 4.5);
  CATCH_CHECK(pairs[0].sentence2 == "A person \"runs\".");
  CATCH_CHECK(pairs[1].sentence2 == "y");
  std::ofstream(dir / "bad.tsv") << "g\tf\ty\t1\tfive\ta\tb\n";
  CATCH_REQUIRE_THROWS_WITH(pruner::read_sts(dir / "bad.tsv"), Catch::Contains("line 1") && Catch::Contains("five"));
  std::ofstream(dir / "short.tsv") << "g\tf\t4.0\ta\tb\n";
  CATCH_REQUIRE_THROWS_WITH(pruner::read_sts(dir / "short.tsv"), Catch::Contains("7 or 9"));
}

CATCH_TEST_CASE("Hugging Face STS CSV files (header, quoting) are read", "[sts]") {
  auto dir = testing::temp_dir("sts-csv");
  // The layout of the sentence-transformers/stsb export: columns by name, scores in [0, 1].
  std::ofstream(dir / "hf.csv") << "sentence1,sentence2,score\n"
                                << "A man runs.,\"A person, \"\"running\"\".\",0.9\r\n"
                                << "\"Two\nlines\",x,0.0\n";
  auto pairs = pruner::read_sts(dir / "hf.csv");
  CATCH_REQUIRE(pairs.size() == 2);
  CATCH_CHECK(pairs[0].sentence1 == "A man runs.");
  CATCH_CHECK(pairs[0].sentence2 == "A person, \"running\".");
  CATCH_CHECK(pairs[0].score == 0.9);
  CATCH_CHECK(pairs[1].sentence1 == "Two\nlines");
  std::ofstream(dir / "order.csv") << "score,sentence2,sentence1\n3.5,b,a\n";
  pairs = pruner::read_sts(dir / "order.csv");
  CATCH_REQUIRE(pairs.size() == 1);
  CATCH_CHECK((pairs[0].sentence1 == "a" && pairs[0].sentence2 == "b" && pairs[0].score == 3.5));
  std::ofstream(dir / "noscore.csv") << "sentence1,sentence2,similarity\na,b,1\n";
  CATCH_CHECK_THROWS_WITH(pruner::read_sts(dir / "noscore.csv"), Catch::Contains("no column 'score'"));
  std::ofstream(dir / "ragged.csv") << "sentence1,sentence2,score\na,b\n";
  CATCH_CHECK_THROWS_WITH(pruner::read_sts(dir / "ragged.csv"), Catch::Contains("record 2"));
  std::ofstream(dir / "open.csv") << "sentence1,sentence2,score\n\"a,b,1\n";
  CATCH_CHECK_THROWS_WITH(pruner::read_sts(dir / "open.csv"), Catch::Contains("not valid CSV"));
}

CATCH_TEST_CASE("dense all-MiniLM-L6-v2 on STS-B dev matches sentence-transformers", "[sts][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  auto pairs = pruner::read_sts(testing::shared_data_dir() / "stsb/sts-dev.csv");
  const auto reference = models::read_json_file(testing::fixture_path("minilm/sts_dev_reference.json"));
  auto r = pruner::evaluate_sts(ckpt, pairs, 64, torch::kCPU);
  CATCH_CHECK(r.pairs == reference["pairs"].get<std::size_t>());
  CATCH_CHECK(std::abs(r.spearman_x100 - reference["spearman"].get<double>()) <= 0.05);
}
