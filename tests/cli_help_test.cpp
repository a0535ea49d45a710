// The command line's help and vocabulary: every option --help lists is one the parser accepts,
// old spellings still work but are not listed, mistakes get a suggestion, and docs/cli.md holds
// the option table the code produces.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "models/errors.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/option_table.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"

namespace hp = headprune;
using hp::testing::run_cli;

namespace {

/// The help text of `command`, as `headprune COMMAND --help` prints it.
std::string help_of(const std::string& command) {
  for (const auto& c : hp::cli::commands()) {
    if (c.name != command) continue;
    std::ostringstream captured;
    auto* old = std::cout.rdbuf(captured.rdbuf());
    c.run({"--help"}, hp::cli::GlobalOptions{});
    std::cout.rdbuf(old);
    return captured.str();
  }
  return "";
}

/// "--out" of a row's flag "-o, --out".
std::string long_flag(const hp::cli::OptionRow& row) { return row.flag.substr(row.flag.find("--")); }

}  // namespace

CATCH_TEST_CASE("every option a command's help lists is one its parser accepts", "[cli][help]") {
  const auto rows = hp::cli::all_option_rows();
  CATCH_REQUIRE(rows.size() > 80);
  for (const auto& row : rows) {
    if (row.group == "Arguments") continue;
    CATCH_CAPTURE(row.command, row.flag);
    CATCH_CHECK(help_of(row.command).find(long_flag(row)) != std::string::npos);
    std::vector<std::string> args{row.command, long_flag(row)};
    if (!row.metavar.empty()) args.push_back("1");
    args.push_back("--help");
    std::ostringstream sink;
    auto* old = std::cout.rdbuf(sink.rdbuf());
    const int rc = run_cli(args);
    std::cout.rdbuf(old);
    CATCH_CHECK(rc == 0);
  }
}

CATCH_TEST_CASE("old spellings are accepted but not listed", "[cli][help]") {
  std::size_t aliases = 0;
  for (const auto& row : hp::cli::all_option_rows())
    for (const auto& alias : row.aliases) {
      ++aliases;
      CATCH_CAPTURE(row.command, alias);
      const auto help = help_of(row.command);
      CATCH_CHECK(help.find(alias + " ") == std::string::npos);
      std::ostringstream sink;
      auto* old = std::cout.rdbuf(sink.rdbuf());
      const int rc = run_cli({row.command, alias, "1", "--help"});
      std::cout.rdbuf(old);
      CATCH_CHECK(rc == 0);
    }
  CATCH_CHECK(aliases >= 10);
  // sweep takes --targets: the single-target flags are not offered at all.
  CATCH_CHECK(help_of("sweep").find("--target-sparsity ") == std::string::npos);
  CATCH_CHECK(help_of("sweep").find("--l0-lambda") == std::string::npos);
}

CATCH_TEST_CASE("help shows groups, metavariables, defaults as written and examples", "[cli][help]") {
  const auto help = help_of("prune");
  for (const char* part : {"Arguments:", "Required:", "Target:", "Training:", "Benchmark:", "Resume:",
                           "Global options", "Examples:", "-o [ --out ] DIR", "--data FILE...",
                           "--lr X (=0.1)", "--beta X (=0.666667)", "--threads N"})
    CATCH_CHECK_THAT(help, Catch::Contains(part));
  CATCH_CHECK_THAT(help, !Catch::Contains("0.10000000000000001"));
  CATCH_CHECK_THAT(help, !Catch::Contains(" arg "));
  CATCH_CHECK_THAT(help, !Catch::Contains("--model"));
  CATCH_CHECK(help.find("Required:") < help.find("Advanced training:"));
  for (const auto& c : hp::cli::commands()) {
    CATCH_CAPTURE(c.name);
    CATCH_CHECK_THAT(help_of(c.name), Catch::Contains("Examples:"));
  }
}

CATCH_TEST_CASE("mistyped commands and options get a suggestion", "[cli][help]") {
  CATCH_CHECK(run_cli({"prnue"}) == 2);
  CATCH_CHECK(run_cli({"help", "prune"}) == 0);
  CATCH_CHECK(run_cli({"help", "prnue"}) == 2);
  hp::cli::CommandLine line("bench", "bench DENSE PRUNED");
  std::string dense, batches;
  line.positional("dense", "DENSE", &dense, "dense folder");
  line.group("Benchmark").add_options()("batch-size", hp::cli::arg(&batches, "N,..."), "sizes");
  boost::program_options::variables_map vm;
  CATCH_CHECK_THROWS_WITH(line.parse({"d", "--batchsize", "1"}, vm),
                          Catch::Contains("did you mean --batch-size?"));
  CATCH_CHECK(hp::cli::edit_distance("prnue", "prune") == 2);
}

CATCH_TEST_CASE("a folder swallowed by --data is named as the missing MODEL", "[cli][help]") {
  const auto dir = hp::testing::temp_dir("swallowed");
  hp::cli::CommandLine line("prune", "prune MODEL --data FILE...");
  std::string model;
  line.positional("model", "MODEL", &model, "checkpoint folder");
  line.group("Required").add_options()(
      "data", boost::program_options::value<std::vector<std::string>>()->multitoken()->required(), "text");
  boost::program_options::variables_map vm;
  CATCH_CHECK_THROWS_WITH(line.parse({"--data", "a.txt", dir.string()}, vm),
                          Catch::Contains("MODEL is missing") && Catch::Contains("put MODEL first"));
}

CATCH_TEST_CASE("docs/cli.md holds the option table the code produces", "[cli][help]") {
  std::ifstream in(hp::testing::source_dir() / "docs/cli.md");
  std::stringstream text;
  text << in.rdbuf();
  const auto table = hp::cli::option_table_markdown(hp::cli::all_option_rows());
  CATCH_CHECK(text.str().find(table) != std::string::npos);
  if (text.str().find(table) == std::string::npos)
    CATCH_WARN("regenerate with: build/headprune help --markdown, pasted between the markers in docs/cli.md");
}
