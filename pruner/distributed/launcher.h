// `headprune launch`: starts the ranks of a data-parallel job on this machine, as torchrun's
// standalone mode does, with the environment the ranks join by (pruner/distributed/process_group.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headprune::pruner {

/// What to start and where the ranks meet.
struct LaunchOptions {
  int nproc = 1;                          ///< processes (ranks) on this machine
  std::string master_addr = "127.0.0.1";  ///< where rank 0 serves the rendezvous store
  int master_port = 0;                    ///< 0 = a free port on master_addr
  int64_t grace_seconds = 30;             ///< after a failure: wait this long, then SIGTERM
  std::vector<std::string> command;       ///< program (looked up in PATH) and its arguments
};

/// Starts options.nproc copies of options.command, each with RANK = LOCAL_RANK = its index,
/// WORLD_SIZE = LOCAL_WORLD_SIZE = nproc, MASTER_ADDR, MASTER_PORT and, unless already set,
/// OMP_NUM_THREADS = cores / nproc (at least 1) so the ranks do not oversubscribe the cores.
/// The ranks run in their own process group: SIGINT/SIGTERM sent to the launcher are passed on
/// once (each rank then snapshots and stops), and a rank gets SIGTERM if the launcher dies.
/// When a rank fails (non-zero exit or a signal), the others normally stop by themselves (their
/// next collective fails); those still running after grace_seconds get SIGTERM, then SIGKILL
/// 5 s later. Messages go to stderr.
/// @returns 0 when every rank exited 0, else the first failure's exit code (128 + signal
///          for a rank ended by a signal).
/// @throws UsageError for an nproc above this machine's cores or above what its available
///         memory (MemAvailable) holds at 512 MiB per rank plus twice a headprune command's model
///         weights (both numbers in the message); headprune::Error if the program is not an executable file (or not in PATH), a process
///         cannot be started or no free port is found.
int launch(const LaunchOptions& options);

}  // namespace headprune::pruner
