// Data-parallel gate training over c10d Gloo (loopback): `headprune launch` with 2 real
// processes against 1 process with the same global batch and seed; SIGTERM and --resume; a rank
// that dies; a peer that never comes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pruner/records/gate_state.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

/// The gate-training command line on the tiny workspace, 1 thread per process.
/// `max_extra_steps`: --max-extra-steps (-1, the default, as many as `steps`).
std::vector<std::string> train_gates_args(const testing::Workspace& w, const fs::path& out, int64_t steps,
                                          int64_t max_extra_steps = -1) {
  return {"train-gates", w.model.string(), "--data", w.corpus.string(), "--target-sparsity", "0.5",
          "--steps", std::to_string(steps), "--max-extra-steps", std::to_string(max_extra_steps),
          "--batch-size", "8", "--lr", "0.2", "--log-every", "1", "--save-every", "0", "-o", out.string(),
          "--threads", "1"};
}

/// `headprune launch --nproc 2 -- headprune ARGS --distributed` (or ARGS alone with nproc 1).
std::vector<std::string> launched(int nproc, std::vector<std::string> args) {
  if (nproc == 1) return args;
  args.insert(args.begin(), {"launch", "--nproc", std::to_string(nproc), "--grace", "5", "--", "headprune"});
  args.insert(args.end(), {"--distributed", "--dist-timeout", "20"});
  return args;
}

/// Starts the headprune binary with `args` as a child process.
pid_t start(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(HEADPRUNE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(HEADPRUNE_BINARY, argv.data());
    std::_Exit(127);
  }
  return pid;
}

/// Waits for `pid`; its exit code (128 + signal if a signal ended it).
int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_binary(const std::vector<std::string>& args) { return wait_for(start(args)); }

/// Waits until `file` holds at least `lines` lines (or 60 s pass).
void wait_for_lines(const fs::path& file, int lines) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(file);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    if (n >= lines) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// The processes whose parent is `parent` (from /proc/PID/stat).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

/// Both gate folders hold the same mask and log_alpha within 1e-5. Splitting a batch across
/// ranks only reorders float32 sums (relative error ~1e-7 in each gradient); AdamW's step
/// m/√v is scale-free, so each step moves log α by at most lr (0.2 here) and a reordering
/// changes it by ~1e-7 of that; over the 30–200 steps compared this stays far below 1e-5,
/// while a rank that trained on the wrong share or skipped the all-reduce moves log α by
/// about lr per step (tenths).
void check_same_gates(const fs::path& a, const fs::path& b) {
  const auto x = pruner::GateState::load(a), y = pruner::GateState::load(b);
  CATCH_REQUIRE(x.complete);
  CATCH_REQUIRE(y.complete);
  CATCH_REQUIRE(x.layers.size() == y.layers.size());
  for (size_t l = 0; l < x.layers.size(); ++l) {
    CATCH_CHECK(x.layers[l].keep == y.layers[l].keep);
    for (size_t h = 0; h < x.layers[l].log_alpha.size(); ++h)
      CATCH_CHECK(x.layers[l].log_alpha[h] == Approx(y.layers[l].log_alpha[h]).margin(1e-5));
  }
}

}  // namespace

CATCH_TEST_CASE("2 ranks over Gloo train the gates 1 process does with the same global batch",
                "[distributed]") {
  testing::Workspace w("dist-same");
  CATCH_REQUIRE(run_binary(train_gates_args(w, w.dir / "one", 30)) == 0);
  CATCH_REQUIRE(run_binary(launched(2, train_gates_args(w, w.dir / "two", 30))) == 0);
  check_same_gates(w.dir / "one", w.dir / "two");
  // The losses logged by rank 0 are the whole batch's, as one process logs them. Relative
  // agreement 1e-4 where the loss is sizeable; while the gates are all open the loss is 0 up to
  // float32 rounding of terms of order 1 (1 - cosine of unit-norm embeddings, relative hidden
  // error): a few ulps of 1 (~1e-7), so near zero an absolute margin of 1e-6 applies.
  std::ifstream one(w.dir / "one/train_log.jsonl"), two(w.dir / "two/train_log.jsonl");
  std::string a, b;
  int lines = 0;
  while (std::getline(one, a) && std::getline(two, b)) {
    ++lines;
    CATCH_CHECK(nlohmann::json::parse(a)["loss"].get<double>() ==
                Approx(nlohmann::json::parse(b)["loss"].get<double>()).epsilon(1e-4).margin(1e-6));
  }
  // 30 steps, plus the blocks both ranks added alike while the gates had not converged.
  const auto gate_steps = pruner::GateState::load(w.dir / "one").summary.at("gate_steps").get<int64_t>();
  CATCH_CHECK(pruner::GateState::load(w.dir / "two").summary.at("gate_steps").get<int64_t>() == gate_steps);
  CATCH_CHECK(lines == gate_steps);
}

// With --rearrange and --train-weights every rank rearranges the mask fixed after the gate
// phase, and all take rank 0's (an all-reduce of rank 0's keep-mask and gate values against the
// other ranks' zeros): 2 ranks export the mask and gate values 1 process does. A rank that
// added its own values instead of zeros would double every exported gate.
CATCH_TEST_CASE("2 ranks of prune --rearrange --train-weights export the rearranged mask 1 process does",
                "[distributed][rearrange]") {
  testing::Workspace w("dist-rearrange");
  const auto args = [&](const fs::path& out) {
    return std::vector<std::string>{"prune", w.model.string(), "--data", w.corpus.string(), "--target-sparsity",
                                    "0.5", "--steps", "30", "--max-extra-steps", "0", "--batch-size", "8", "--lr",
                                    "0.2", "--train-weights", "--finetune-steps", "2", "--rearrange",
                                    "--rearrange-sequences", "16", "--no-bench", "--threads", "1", "-o", out.string()};
  };
  CATCH_REQUIRE(run_binary(args(w.dir / "one")) == 0);
  CATCH_REQUIRE(run_binary(launched(2, args(w.dir / "two"))) == 0);
  const auto x = pruner::GateState::load(w.dir / "one/headprune"), y = pruner::GateState::load(w.dir / "two/headprune");
  CATCH_REQUIRE(x.summary.contains("rearranged"));
  CATCH_REQUIRE(y.summary.contains("rearranged"));
  CATCH_REQUIRE(x.layers.size() == y.layers.size());
  for (std::size_t l = 0; l < x.layers.size(); ++l) {
    CATCH_CHECK(x.layers[l].keep == y.layers[l].keep);
    for (std::size_t h = 0; h < x.layers[l].gate.size(); ++h)
      CATCH_CHECK(y.layers[l].gate[h] == Approx(x.layers[l].gate[h]).margin(1e-5));
  }
}

CATCH_TEST_CASE("SIGTERM to the launcher: every rank stops at the same step, 1 process resumes to the same gates",
                "[distributed][signal]") {
  testing::Workspace w("dist-sigterm");
  CATCH_REQUIRE(run_binary(train_gates_args(w, w.dir / "full", 200, 0)) == 0);
  const auto out = w.dir / "stopped";
  const pid_t launcher = start(launched(2, train_gates_args(w, out, 200, 0)));
  wait_for_lines(out / "train_log.jsonl", 5);
  ::kill(launcher, SIGTERM);
  CATCH_CHECK(wait_for(launcher) == 128 + SIGTERM);
  const auto snapshot = pruner::GateState::load(out);
  CATCH_CHECK_FALSE(snapshot.complete);
  CATCH_CHECK((snapshot.step >= 5 && snapshot.step < 200));
  auto resume = train_gates_args(w, out, 200, 0);
  resume.push_back("--resume");
  CATCH_REQUIRE(run_binary(launched(1, resume)) == 0);  // the snapshot resumes with any world size
  check_same_gates(w.dir / "full", out);
}

CATCH_TEST_CASE("a rank that dies ends every rank with an error and no output, and --resume completes",
                "[distributed]") {
  testing::Workspace w("dist-kill");
  const auto out = w.dir / "pruned";
  auto args = std::vector<std::string>{"prune", w.model.string(), "--data", w.corpus.string(),
                                       "--target-sparsity", "0.5", "--steps", "400", "--batch-size", "8",
                                       "--log-every", "1", "--save-every", "20", "--no-bench", "-o",
                                       out.string(), "--threads", "1"};
  const pid_t launcher = start(launched(2, args));
  const auto work = w.dir / ".pruned.gates";
  wait_for_lines(work / "train_log.jsonl", 30);
  const auto ranks = children_of(launcher);
  CATCH_REQUIRE(ranks.size() == 2);
  ::kill(std::max(ranks[0], ranks[1]), SIGKILL);  // the rank started last: rank 1
  const auto t0 = std::chrono::steady_clock::now();
  CATCH_CHECK(wait_for(launcher) != 0);
  CATCH_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  CATCH_CHECK(children_of(launcher).empty());
  CATCH_CHECK_FALSE(fs::exists(out));
  args.push_back("--resume");
  CATCH_REQUIRE(run_binary(launched(2, args)) == 0);
  CATCH_CHECK(fs::exists(out / "headprune/summary.json"));
}

CATCH_TEST_CASE("a peer that never comes: the rank stops after --dist-timeout with the address",
                "[distributed]") {
  testing::Workspace w("dist-alone");
  const auto log = w.dir / "stderr.txt";
  const auto cmd = fmt::format("WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 '{}' train-gates "
                               "'{}' --data '{}' --target-sparsity 0.5 -o '{}' --distributed --dist-timeout 2 "
                               "2> '{}'",
                               HEADPRUNE_BINARY, w.model.string(), w.corpus.string(), (w.dir / "g").string(),
                               log.string());
  const auto t0 = std::chrono::steady_clock::now();
  CATCH_CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 1);
  CATCH_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
  CATCH_CHECK_THAT(testing::read_text(log), Catch::Contains("could not meet its peers at 127.0.0.1:29533"));
  // Started by a launcher but without --distributed: refused, nothing trained alone.
  const auto plain = fmt::format("WORLD_SIZE=2 RANK=0 '{}' train-gates '{}' --data '{}' --target-sparsity 0.5 "
                                 "-o '{}' 2> '{}'",
                                 HEADPRUNE_BINARY, w.model.string(), w.corpus.string(),
                                 (w.dir / "g2").string(), log.string());
  CATCH_CHECK(WEXITSTATUS(std::system(plain.c_str())) == 2);
  CATCH_CHECK_THAT(testing::read_text(log), Catch::Contains("--distributed is not given"));
  CATCH_CHECK_FALSE(fs::exists(w.dir / "g2"));
}

CATCH_TEST_CASE("launch refuses an --nproc beyond the machine's cores and memory, naming both, before any rank",
                "[distributed]") {
  testing::Workspace w("dist-bound");
  const auto log = w.dir / "stderr.txt";
  const auto out = w.dir / "g";
  const auto cmd = fmt::format("'{}' launch --nproc 99999 -- headprune train-gates '{}' --data '{}' "
                               "--target-sparsity 0.5 -o '{}' --distributed 2> '{}'",
                               HEADPRUNE_BINARY, w.model.string(), w.corpus.string(), out.string(), log.string());
  const auto t0 = std::chrono::steady_clock::now();
  CATCH_CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 2);
  CATCH_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  const auto message = testing::read_text(log);
  CATCH_CHECK_THAT(message, Catch::Contains("--nproc 99999 is more than this machine can run: ") &&
                                Catch::Contains(fmt::format("{} cores and ", std::thread::hardware_concurrency())) &&
                                Catch::Contains("GiB of available memory allow at most"));
  CATCH_CHECK(std::count(message.begin(), message.end(), '\n') == 1);
  CATCH_CHECK_FALSE(fs::exists(out));
}

CATCH_TEST_CASE("SIGTERM to the launcher at any moment ends it and every rank", "[distributed]") {
  testing::Workspace w("dist-early");
  for (const int delay_ms : {0, 20, 150, 600}) {
    CATCH_INFO(delay_ms << " ms after the start");
    const auto out = w.dir / fmt::format("g{}", delay_ms);
    const pid_t launcher = start(launched(2, train_gates_args(w, out, 400, 0)));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(launcher, SIGTERM);
    const auto t0 = std::chrono::steady_clock::now();
    CATCH_CHECK(wait_for(launcher) == 128 + SIGTERM);
    CATCH_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
    // No rank outlives it (a rank's command line names its own --out).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    auto running = [&] {
      for (const auto& entry : fs::directory_iterator("/proc")) {
        std::ifstream in(entry.path() / "cmdline");
        const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (cmdline.find(out.string()) != std::string::npos) return true;
      }
      return false;
    };
    while (running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CATCH_CHECK_FALSE(running());
  }
}
