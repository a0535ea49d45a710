#include "pruner/distributed/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/log.h"

namespace headprune::pruner {
namespace {

volatile std::sig_atomic_t g_pending_signal = 0;

void remember_signal(int signal_number) { g_pending_signal = signal_number; }

/// While alive, SIGINT and SIGTERM are only recorded (in g_pending_signal), for the launcher
/// to pass on; the previous handlers come back after.
class SignalsRecorded {
 public:
  SignalsRecorded() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    ::sigaction(SIGINT, &action, &previous_int_);
    ::sigaction(SIGTERM, &action, &previous_term_);
  }
  ~SignalsRecorded() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
  }
  SignalsRecorded(const SignalsRecorded&) = delete;
  SignalsRecorded& operator=(const SignalsRecorded&) = delete;

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
};

/// A TCP port nobody listens on at `addr` now (the kernel's choice for port 0).
int free_port(const std::string& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(fmt::format("launch: cannot open a socket: {}", std::strerror(errno)));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  if (::inet_pton(AF_INET, addr.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) throw Error(fmt::format("launch: no free port on {}; give one with --master-port", addr));
  return ntohs(a.sin_port);
}

/// True if `program` names an executable file, directly (with a '/') or found in PATH.
bool runnable(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (std::size_t start = 0; start <= dirs.size();) {
    const auto end = std::min(dirs.find(':', start), dirs.size());
    const auto dir = dirs.substr(start, end - start);
    if (::access(((dir.empty() ? "." : dir) + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

/// What one rank runs: its argv and environment, built before fork() (the child of a process
/// with threads may only call async-signal-safe functions until exec).
struct RankProcess {
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
  std::string exec_failed;  ///< the message the child writes if exec fails

  RankProcess(const LaunchOptions& o, int rank, int port) : args(o.command) {
    std::map<std::string, std::string> vars;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      const auto eq = entry.find('=');
      if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    const auto cores = std::max(1u, std::thread::hardware_concurrency());
    vars.emplace("OMP_NUM_THREADS", std::to_string(std::max(1u, cores / static_cast<unsigned>(o.nproc))));
    vars["RANK"] = vars["LOCAL_RANK"] = std::to_string(rank);
    vars["WORLD_SIZE"] = vars["LOCAL_WORLD_SIZE"] = std::to_string(o.nproc);
    vars["MASTER_ADDR"] = o.master_addr;
    vars["MASTER_PORT"] = std::to_string(port);
    for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
    for (auto& a : args) argv.push_back(a.data());
    for (auto& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    exec_failed = fmt::format("headprune launch: cannot run '{}'\n", o.command.front());
  }

  /// In the child: its own process group, SIGTERM when the launcher dies, then the program.
  /// Never returns (exit 127 if the program cannot run).
  [[noreturn]] void exec() {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::execvpe(argv[0], argv.data(), envp.data());
    const auto written = ::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    static_cast<void>(written);
    ::_exit(127);
  }
};

/// Bytes of memory available to new processes (/proc/meminfo's MemAvailable), or 0 if unknown.
uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

/// The bytes one rank needs at least: the runtime, and for a headprune command whose model is
/// a path here, its weight files twice (the dense teacher and the gated student).
uint64_t rank_memory(const std::vector<std::string>& command) {
  constexpr uint64_t kRuntime = uint64_t{512} << 20;  // LibTorch, BLAS and the process itself
  if (command.size() < 3) return kRuntime;
  const std::filesystem::path model = command[2];
  uint64_t weights = 0;
  std::error_code ec;
  if (std::filesystem::is_regular_file(model, ec)) weights = std::filesystem::file_size(model, ec);
  else if (std::filesystem::is_directory(model, ec))
    for (const auto& entry : std::filesystem::directory_iterator(model, ec))
      if (entry.is_regular_file(ec) && entry.path().extension() == ".safetensors") weights += entry.file_size(ec);
  return kRuntime + 2 * weights;
}

/// Refuses an --nproc this machine cannot run: more ranks than cores (data-parallel ranks on
/// one machine gain nothing past one per core) or than the available memory holds.
/// @throws UsageError with both numbers.
void check_machine_room(const LaunchOptions& o) {
  const auto cores = std::max(1u, std::thread::hardware_concurrency());
  const auto available = available_memory();
  const auto per_rank = rank_memory(o.command);
  const auto by_memory = available > 0 ? available / per_rank : uint64_t{cores};
  const auto most = std::min<uint64_t>(cores, by_memory);
  if (static_cast<uint64_t>(o.nproc) <= most) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  throw UsageError(fmt::format("launch: --nproc {} is more than this machine can run: {} cores and {:.1f} GiB of "
                               "available memory allow at most {} rank(s) (one per core, {:.1f} GiB each)",
                               o.nproc, cores, static_cast<double>(available) / kGiB, most,
                               static_cast<double>(per_rank) / kGiB));
}

/// The exit code a shell reports for a wait status.
int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

/// The running ranks and what the launcher has decided about them.
class Ranks {
 public:
  Ranks(const LaunchOptions& o, int port) : o_(o) {
    for (int rank = 0; rank < o.nproc; ++rank) {
      if (g_pending_signal) {  // wait_all passes it on to the ranks already started
        log::info("launch: a signal arrived while starting rank {}; no more ranks are started", rank);
        return;
      }
      RankProcess process(o, rank, port);
      const pid_t pid = ::fork();
      if (pid < 0) {
        signal_all(SIGKILL);
        throw Error(fmt::format("launch: cannot start rank {}: {}", rank, std::strerror(errno)));
      }
      if (pid == 0) process.exec();
      pids_.push_back(pid);
    }
    log::info("launch: {} ranks of '{}' started (rendezvous {}:{})", o.nproc, o.command.front(),
              o.master_addr, port);
  }

  /// Waits for every rank; returns the exit code launch() promises.
  int wait_all() {
    auto running = pids_.size();
    while (running > 0) {
      if (g_pending_signal) forward_signal();
      if (std::chrono::steady_clock::now() > deadline_) escalate();
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      --running;
      on_exit(pid, exit_code(status));
    }
    return first_failure_ != 0 ? first_failure_ : (signalled_ != 0 ? 128 + signalled_ : 0);
  }

 private:
  void forward_signal() {
    const int s = g_pending_signal;
    g_pending_signal = 0;
    signalled_ = s;
    log::info("launch: {} received, passing it to the ranks", s == SIGINT ? "SIGINT" : "SIGTERM");
    stopping_ = true;
    signal_all(s);
  }

  void on_exit(pid_t pid, int code) {
    const auto rank = static_cast<int>(std::find(pids_.begin(), pids_.end(), pid) - pids_.begin());
    if (rank < static_cast<int>(pids_.size())) pids_[static_cast<std::size_t>(rank)] = 0;
    if (code == 0 || first_failure_ != 0) return;
    first_failure_ = code;
    if (stopping_) return;  // the ranks were asked to stop: they snapshot and end on their own
    log::warn("launch: rank {} (pid {}) exited with code {}; the other ranks stop when they notice (or "
              "get SIGTERM in {} s)",
              rank, pid, code, o_.grace_seconds);
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(o_.grace_seconds);
  }

  /// After a failure: the ranks still running get SIGTERM when the grace period ends, SIGKILL
  /// kKillAfter later.
  void escalate() {
    static constexpr std::chrono::seconds kKillAfter{5};
    if (!terminated_) {
      log::warn("launch: ranks still running {} s after the failure: SIGTERM", o_.grace_seconds);
      signal_all(SIGTERM);
      terminated_ = true;
      deadline_ = std::chrono::steady_clock::now() + kKillAfter;
    } else {
      signal_all(SIGKILL);
      deadline_ = kNoDeadline;
    }
  }

  void signal_all(int signal_number) {
    for (const pid_t pid : pids_)
      if (pid > 0) ::kill(pid, signal_number);
  }

  const LaunchOptions& o_;
  std::vector<pid_t> pids_;  ///< 0 once a rank has exited
  int first_failure_ = 0;
  bool stopping_ = false;  ///< a signal was passed on
  int signalled_ = 0;      ///< the last signal passed on
  bool terminated_ = false;  ///< SIGTERM sent after a failure
  static constexpr auto kNoDeadline = std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::time_point deadline_ = kNoDeadline;  ///< of the next escalation (none: kNoDeadline)
};

}  // namespace

int launch(const LaunchOptions& o) {
  if (o.nproc < 1) throw UsageError("--nproc must be at least 1");
  if (o.command.empty()) throw UsageError("launch: no command after --");
  if (!runnable(o.command.front()))
    throw Error(fmt::format("launch: cannot run '{}': no such executable file (nor in PATH)", o.command.front()));
  check_machine_room(o);
  const SignalsRecorded signals;  // from here on a SIGINT/SIGTERM is answered, even while starting ranks
  const int port = o.master_port > 0 ? o.master_port : free_port(o.master_addr);
  Ranks ranks(o, port);
  return ranks.wait_all();
}

}  // namespace headprune::pruner
