// Writing folders loses nothing (issue 19): --force replaces only what headprune wrote, the
// input is never an output, an interrupted run is continued rather than silently restarted,
// and an under-trained run says so.
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <set>

#include "pruner/atomic_write.h"
#include "pruner/records/gate_record.h"
#include "pruner/report/report.h"
#include "pruner/training/gates_folder.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// Every file under `dir` with its size: a cheap picture of "unchanged".
std::set<std::pair<std::string, std::uintmax_t>> listing(const fs::path& dir) {
  std::set<std::pair<std::string, std::uintmax_t>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.insert({e.path().lexically_relative(dir).string(), e.file_size()});
  return out;
}

struct Workspace {
  fs::path dir = testing::temp_dir("lost");
  fs::path model = dir / "model";
  fs::path corpus = dir / "corpus.txt";
  Workspace() {
    testing::write_tiny_folder(testing::tiny_checkpoint(2, 4), model);
    std::ofstream out(corpus);
    const char* sentences[] = {"the cat sat on the mat.", "knowledge is power.",
                               "all that glitters is not gold.", "the early bird catches the worm.",
                               "actions speak louder than words.", "time and tide wait for no man."};
    for (int rep = 0; rep < 12; ++rep)
      for (const auto* s : sentences) out << s << "\n";
  }
  std::vector<std::string> training(const fs::path& out, const std::string& steps) const {
    return {"--data", corpus.string(), "--target-sparsity", "0.25", "--steps", steps,
            "--batch-size", "8", "--max-length", "32", "--out", out.string()};
  }
};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

CATCH_TEST_CASE("apply --force replaces a folder headprune wrote, and nothing else", "[cli][lost]") {
  Workspace w;
  const auto out = w.dir / "pruned";
  CATCH_REQUIRE(testing::run_cli({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--out", out.string()}) == 0);
  CATCH_CHECK(fs::exists(out / pruner::kManifestFile));
  // Only headprune's own files there: replaced by the second run's.
  CATCH_REQUIRE(testing::run_cli({"apply", w.model.string(), "--remove-heads", R"({"1": [0, 2]})", "--out",
                     out.string(), "--force"}) == 0);
  CATCH_CHECK(pruner::load_report(out).heads_kept() == 6);
  // A file of the user's: the run stops before a byte is written, naming it.
  std::ofstream(out / "notes.txt") << "mine";
  const auto before = listing(out);
  CATCH_CHECK(testing::run_cli({"apply", w.model.string(), "--remove-heads", R"({"0": [3]})", "--out",
                   out.string(), "--force"}) == 1);
  CATCH_CHECK(listing(out) == before);
  CATCH_CHECK(read(out / "notes.txt") == "mine");
  CATCH_CHECK(pruner::load_report(out).heads_kept() == 6);
  CATCH_CHECK_THROWS_WITH(pruner::check_replaceable_folder(out), Catch::Contains("file 'notes.txt'"));
  int siblings = 0;  // no temporary folder left beside it
  for (const auto& e : fs::directory_iterator(w.dir)) siblings += e.path().filename().string().front() == '.';
  CATCH_CHECK(siblings == 0);
}

CATCH_TEST_CASE("apply --force refuses whatever headprune's record does not list, naming it, and changes nothing",
                "[cli][lost]") {
  Workspace w;
  const auto out = w.dir / "pruned";
  const std::vector<std::string> apply = {"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--out",
                                          out.string(), "--force"};
  CATCH_REQUIRE(testing::run_cli(apply) == 0);
  // Each planted entry alone: the same command is refused and the folder, entry included, stays.
  struct Plant {
    std::string what, name;
    std::function<void(const fs::path&)> make;
  };
  const std::vector<Plant> plants = {
      {"file 'config.json.orig'", "config.json.orig", [](const fs::path& p) { std::ofstream(p) << "mine"; }},
      {"folder 'notes'", "notes", [](const fs::path& p) { fs::create_directory(p), std::ofstream(p / "a.txt") << "mine"; }},
      {"folder 'empty'", "empty", [](const fs::path& p) { fs::create_directory(p); }},
      {"symbolic link 'linked'", "linked", [&](const fs::path& p) { fs::create_directory_symlink(w.model, p); }},
      {"FIFO 'pipe'", "pipe", [](const fs::path& p) { CATCH_REQUIRE(::mkfifo(p.c_str(), 0600) == 0); }},
  };
  for (const auto& plant : plants) {
    CATCH_INFO(plant.what);
    plant.make(out / plant.name);
    const auto before = listing(out);
    CATCH_CHECK(testing::run_cli(apply) == 1);
    CATCH_CHECK_THROWS_WITH(pruner::check_replaceable_folder(out), Catch::Contains(plant.what));
    CATCH_CHECK(listing(out) == before);
    CATCH_CHECK(fs::exists(fs::symlink_status(out / plant.name)));
    fs::remove_all(out / plant.name);
  }
  // Inside a folder headprune wrote (prune's headprune/): a file its record does not list.
  const auto pruned = w.dir / "pruned-job";
  const auto prune = concat({"prune", w.model.string(), "--no-bench", "--force"}, w.training(pruned, "4"));
  CATCH_REQUIRE(testing::run_cli(prune) == 0);
  std::ofstream(pruned / "headprune" / "mine.txt") << "mine";
  const auto before = listing(pruned);
  CATCH_CHECK(testing::run_cli(prune) == 1);
  CATCH_CHECK(listing(pruned) == before);
  CATCH_CHECK_THROWS_WITH(pruner::check_replaceable_folder(pruned), Catch::Contains("file 'headprune/mine.txt'"));
  CATCH_CHECK(fs::is_directory(w.model));  // the symbolic link's target is untouched
  // A folder with no record of a headprune run at all (a user's own config.json and ONNX file).
  const auto theirs = w.dir / "theirs";
  fs::create_directories(theirs / "onnx");
  std::ofstream(theirs / "config.json") << "{}";
  std::ofstream(theirs / "onnx" / "model.onnx") << "mine";
  CATCH_CHECK(testing::run_cli({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--out",
                   theirs.string(), "--force"}) == 1);
  CATCH_CHECK(read(theirs / "config.json") == "{}");
  CATCH_CHECK(read(theirs / "onnx" / "model.onnx") == "mine");
  CATCH_CHECK_THROWS_WITH(pruner::check_replaceable_folder(theirs), Catch::Contains("no readable record"));
}

CATCH_TEST_CASE("the model folder is refused as an output and left unchanged", "[cli][lost]") {
  Workspace w;
  const auto before = listing(w.model);
  CATCH_CHECK(testing::run_cli(concat({"train-gates", w.model.string()}, w.training(w.model, "2"))) == 1);
  CATCH_CHECK(testing::run_cli(concat({"train-gates", w.model.string()}, w.training(w.model / "gates", "2"))) == 1);
  CATCH_CHECK(testing::run_cli({"apply", w.model.string(), "--remove-heads", R"({"0": [1]})", "--out",
                   w.model.string(), "--force"}) == 1);
  CATCH_CHECK(listing(w.model) == before);
}

CATCH_TEST_CASE("train-gates refuses a folder with other files even with --force, and replaces its own run",
                "[cli][lost]") {
  Workspace w;
  const auto gates = w.dir / "gates";
  fs::create_directories(gates);
  std::ofstream(gates / "notes.txt") << "mine";
  CATCH_CHECK(testing::run_cli(concat({"train-gates", w.model.string()}, w.training(gates, "4"))) == 1);
  CATCH_CHECK(testing::run_cli(concat({"train-gates", w.model.string(), "--force"}, w.training(gates, "4"))) == 1);
  CATCH_CHECK_FALSE(fs::exists(gates / "gates.json"));
  CATCH_CHECK(read(gates / "notes.txt") == "mine");
  CATCH_CHECK_THROWS_WITH(pruner::check_gates_folder_replaceable(gates), Catch::Contains("'notes.txt'"));
  fs::remove(gates / "notes.txt");
  CATCH_REQUIRE(testing::run_cli(concat({"train-gates", w.model.string()}, w.training(gates, "4"))) == 0);
  // A finished run is not replaced without --force, and is with it.
  CATCH_CHECK(testing::run_cli(concat({"train-gates", w.model.string()}, w.training(gates, "4"))) == 1);
  CATCH_CHECK(testing::run_cli(concat({"train-gates", w.model.string(), "--force"}, w.training(gates, "4"))) == 0);
}

CATCH_TEST_CASE("an interrupted prune is continued with --resume, not silently restarted", "[cli][lost]") {
  Workspace w;
  const auto out = w.dir / "pruned";
  const auto work = w.dir / ".pruned.gates";  // where prune keeps its gate training
  CATCH_REQUIRE(testing::run_cli(concat({"train-gates", w.model.string(), "--stop-after", "4"}, w.training(work, "12"))) == 0);
  CATCH_REQUIRE(fs::exists(work / "train_state.pt"));
  CATCH_CHECK(pruner::interrupted_run(work) == "stopped at step 4");
  const auto prune = concat({"prune", w.model.string(), "--no-bench"}, w.training(out, "12"));
  CATCH_CHECK(testing::run_cli(prune) == 1);  // says --resume would continue it; the snapshot is kept
  CATCH_CHECK(fs::exists(work / "train_state.pt"));
  CATCH_CHECK(testing::run_cli(concat(prune, {"--resume"})) == 0);
  CATCH_CHECK(fs::exists(out / "headprune" / "gates.json"));
  CATCH_CHECK_FALSE(fs::exists(work));
}

CATCH_TEST_CASE("an under-trained run warns in gates.json and the report", "[cli][lost]") {
  Workspace w;
  const auto gates = w.dir / "gates";
  CATCH_REQUIRE(testing::run_cli(concat({"train-gates", w.model.string()}, w.training(gates, "3"))) == 0);
  const auto state = pruner::GateState::load(gates);
  CATCH_CHECK_FALSE(state.summary.at("converged").get<bool>());
  CATCH_CHECK(state.summary.at("convergence_warning").get<std::string>().find("had not converged") !=
              std::string::npos);
  const auto report = pruner::load_report(gates);
  CATCH_CHECK(pruner::to_text(report).find("WARNING: the gates had not converged") != std::string::npos);
  CATCH_CHECK(pruner::to_json(report).contains("warning"));
}
