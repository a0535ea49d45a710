// The include floors of docs/design.md ("Floors"), as scripts/floors lists them and
// scripts/check-floors (run by scripts/lint) checks them: the tree follows them, and a planted
// back-include in each kind of floor fails the check, named.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "tests/test_support.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

/// Runs scripts/check-floors over the tree at `root`; its exit status, its output in `output`
/// (kept in a temporary folder, never in the tree checked).
int check_floors(const fs::path& root, std::string& output) {
  const auto log = testing::temp_dir("floors-log") / "check-floors.log";
  const auto cmd = fmt::format("python3 '{}' --root '{}' > '{}' 2>&1",
                               (testing::source_dir() / "scripts" / "check-floors").string(), root.string(),
                               log.string());
  const int status = std::system(cmd.c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  output = text.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// A copy of the tree's sources and scripts/floors with `line` put first in `file`.
fs::path planted(const std::string& tag, const std::string& file, const std::string& line) {
  const auto root = testing::temp_dir(tag);
  for (const char* top : {"models", "gates", "pruner"})
    fs::copy(testing::source_dir() / top, root / top, fs::copy_options::recursive);
  fs::create_directories(root / "scripts");
  fs::copy_file(testing::source_dir() / "scripts" / "floors", root / "scripts" / "floors");
  std::ifstream in(root / file);
  std::stringstream text;
  text << line << "\n" << in.rdbuf();
  in.close();
  std::ofstream(root / file) << text.str();
  return root;
}

}  // namespace

CATCH_TEST_CASE("the tree's includes follow scripts/floors", "[floors]") {
  std::string output;
  CATCH_CHECK(check_floors(testing::source_dir(), output) == 0);
  CATCH_CHECK_THAT(output, Catch::Contains("includes follow scripts/floors"));
}

CATCH_TEST_CASE("a planted back-include fails the floors check, named: stage, registry, family and top folder",
                "[floors]") {
  struct Plant {
    const char* file;
    const char* include;
    const char* rooms;
  };
  const Plant plants[] = {
      {"pruner/text/corpus.cpp", "pruner/training/gate_training.h", "room pruner/text/ on floor pruner/text"},
      {"pruner/measure/fidelity.cpp", "pruner/surgery/surgery.h", "room pruner/surgery/ on floor pruner/surgery"},
      {"models/config.cpp", "models/registry.h", "room models/registry.h on floor models/registry"},
      {"models/llama/llama_family.cpp", "models/loader.h", "floor models/loaders"},
      {"models/llama/llama_family.cpp", "models/qwen2/qwen2_family.h", "room models/qwen2/"},
      {"models/bert/bert_family.cpp", "models/llama/llama_family.h", "room models/llama/"},
      {"gates/sparsity.cpp", "pruner/log.h", "room pruner/** on floor pruner"},
  };
  for (const auto& plant : plants) {
    CATCH_CAPTURE(plant.file, plant.include);
    const auto root = planted("floors", plant.file, fmt::format("#include \"{}\"", plant.include));
    std::string output;
    CATCH_CHECK(check_floors(root, output) == 1);
    CATCH_CHECK_THAT(output, Catch::Contains(fmt::format("{}:1: includes {}", plant.file, plant.include)) &&
                                 Catch::Contains(plant.rooms) && Catch::Contains("1 include(s) against"));
  }
}
