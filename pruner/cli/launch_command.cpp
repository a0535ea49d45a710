#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/distributed/launcher.h"

namespace headprune::cli {
namespace {

/// This executable's path.
std::string self_path() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

/// `command` with "headprune" or a bare subcommand name (`train-gates ...`) turned into this
/// executable, so the ranks run the same build as the launcher.
std::vector<std::string> resolve_command(std::vector<std::string> command) {
  const auto is_subcommand = [](const std::string& word) {
    const auto& table = commands();
    return std::any_of(table.begin(), table.end(), [&](const Command& c) { return c.name == word; });
  };
  const auto self = self_path();
  if (command.front() == "headprune")
    command.front() = self;
  else if (is_subcommand(command.front()))
    command.insert(command.begin(), self);
  return command;
}

/// A headprune training command without --distributed would train alone in every rank.
void require_distributed(const std::vector<std::string>& command) {
  if (command.front() != self_path()) return;
  if (std::find(command.begin(), command.end(), "--distributed") == command.end())
    throw UsageError("launch: the command has no --distributed, so every rank would train alone; add "
                     "--distributed to it");
}

}  // namespace

int run_launch(const std::vector<std::string>& args, const GlobalOptions&) {
  CommandLine line("launch", "launch --nproc N [options] -- COMMAND [ARGS...]");
  pruner::LaunchOptions o;
  line.group(group::kOptions).add_options()
      ("nproc", arg(&o.nproc, "N")->required(), "processes (ranks) to start on this machine")
      ("master-addr", arg(&o.master_addr, "ADDR", o.master_addr), "address rank 0 serves the rendezvous on")
      ("master-port", arg(&o.master_port, "PORT", o.master_port), "its port (0 = a free one)")
      ("grace", arg(&o.grace_seconds, "S", o.grace_seconds),
       "after a rank fails, seconds the others get to stop on their own before SIGTERM");
  line.example("launch --nproc 2 -- headprune prune MODEL --data train.txt --target-sparsity 0.5 -o out/m-50 "
               "--distributed",
               "prune with 2 data-parallel processes on this machine (each gets cores / 2 threads)")
      .example("launch --nproc 2 -- train-gates MODEL --data train.txt --target-sparsity 0.5 -o out/g "
               "--distributed",
               "the same for train-gates ('headprune' may be left out)");
  const auto dashes = std::find(args.begin(), args.end(), "--");
  po::variables_map vm;
  if (!line.parse({args.begin(), dashes}, vm)) return 0;
  if (dashes == args.end() || dashes + 1 == args.end())
    throw UsageError("launch needs the command after --: headprune launch --nproc 2 -- headprune train-gates "
                     "MODEL ... --distributed");
  if (o.nproc < 1) throw UsageError("--nproc must be at least 1");
  if (o.master_port < 0 || o.master_port > 65535) throw UsageError("--master-port must be in [0, 65535]");
  o.command = resolve_command({dashes + 1, args.end()});
  require_distributed(o.command);
  return pruner::launch(o);
}

}  // namespace headprune::cli
