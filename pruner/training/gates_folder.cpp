#include "pruner/training/gates_folder.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/surgery/export.h"
#include "pruner/training/gate_record.h"
#include "pruner/training/training_run.h"

namespace headprune::pruner {
namespace fs = std::filesystem;

std::vector<std::string> gate_training_files() {
  return {"gates.json", "train_log.jsonl", kSnapshotFile, std::string(kSnapshotFile) + ".tmp",
          GateState::kWeightsFile, std::string(GateState::kWeightsFile) + ".tmp"};
}

std::string interrupted_run(const fs::path& dir) {
  if (!fs::exists(dir / kSnapshotFile)) return "";
  try {
    const auto state = GateState::load(dir);
    return fmt::format("stopped at step {}", state.step);
  } catch (const Error&) {
    return "stopped";
  }
}

std::vector<std::string> prepare_gates_folder(const fs::path& model, const fs::path& out, bool resume,
                                              bool force) {
  check_outside_input(model, out);
  if (fs::exists(out) && !fs::is_directory(out))
    throw Error(fmt::format("--out {} exists and is not a folder", out.string()));
  if (resume || !fs::exists(out)) return {};
  const auto ours = gate_training_files();
  std::vector<std::string> theirs;
  bool has_run = false;
  for (const auto& entry : fs::directory_iterator(out)) {
    const auto name = entry.path().filename().string();
    if (std::find(ours.begin(), ours.end(), name) != ours.end()) has_run = true;
    else theirs.push_back(name);
  }
  std::sort(theirs.begin(), theirs.end());
  if (!force) {
    if (const auto stopped = interrupted_run(out); !stopped.empty())
      throw Error(fmt::format("--out {} holds an interrupted gate training ({}); pass --resume to "
                              "continue it, or --force to start again",
                              out.string(), stopped));
    if (has_run)
      throw Error(fmt::format("--out {} already holds gates.json; choose another folder, or pass "
                              "--force to replace that run",
                              out.string()));
    if (!theirs.empty())
      throw Error(fmt::format("--out {} exists and is not empty; choose a new or empty folder, or "
                              "pass --force (which replaces only gate-training files)",
                              out.string()));
  }
  for (const auto& name : ours) fs::remove(out / name);
  return theirs;
}

}  // namespace headprune::pruner
