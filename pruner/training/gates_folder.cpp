#include "pruner/training/gates_folder.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "pruner/atomic_write.h"
#include "pruner/log.h"
#include "pruner/records/gate_record.h"
#include "pruner/training/interruption.h"
#include "pruner/training/training_run.h"

namespace headprune::pruner {
namespace fs = std::filesystem;

std::vector<std::string> gate_training_files() {
  return {"gates.json", "train_log.jsonl", kSnapshotFile, std::string(kSnapshotFile) + ".tmp",
          GateState::kWeightsFile, std::string(GateState::kWeightsFile) + ".tmp", kFixedMaskFile};
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

namespace {

/// The gate-training files in `out`, in gate_training_files() order. @throws headprune::Error
/// naming the first entry of `out` that gate training does not write (or that is not a
/// regular file): nothing else in the folder may be replaced.
std::vector<std::string> own_files_only(const fs::path& out) {
  const auto ours = gate_training_files();
  std::vector<std::string> theirs;
  for (const auto& entry : fs::directory_iterator(out)) {
    const auto name = entry.path().filename().string();
    if (std::find(ours.begin(), ours.end(), name) == ours.end() || !fs::is_regular_file(entry.symlink_status()))
      theirs.push_back(name);
  }
  std::sort(theirs.begin(), theirs.end());
  if (!theirs.empty())
    throw Error(fmt::format("--out {} holds '{}', which gate training does not write; gate training "
                            "replaces only its own files ({}): move it out or choose a new or empty folder",
                            out.string(), theirs.front(), fmt::join(ours, ", ")));
  std::vector<std::string> found;  // every entry is one of ours now: keep their order
  std::copy_if(ours.begin(), ours.end(), std::back_inserter(found),
               [&](const std::string& name) { return fs::exists(out / name); });
  return found;
}

}  // namespace

void check_gates_folder_replaceable(const fs::path& out) { own_files_only(out); }

void prepare_gates_folder(const fs::path& model, const fs::path& out, bool resume, bool force) {
  check_outside_input(model, out);
  if (fs::exists(out) && !fs::is_directory(out))
    throw Error(fmt::format("--out {} exists and is not a folder", out.string()));
  if (resume || !fs::exists(out)) return;
  const auto found = own_files_only(out);
  if (!force) {
    if (const auto stopped = interrupted_run(out); !stopped.empty())
      throw Error(fmt::format("--out {} holds an interrupted gate training ({}); pass --resume to "
                              "continue it, or --force to start again",
                              out.string(), stopped));
    if (!found.empty())
      throw Error(fmt::format("--out {} holds an earlier gate-training run's files ({}); choose another "
                              "folder, or pass --force to replace them",
                              out.string(), fmt::join(found, ", ")));
  }
  for (const auto& name : found) fs::remove(out / name);
}

void discard_failed_run(const fs::path& out, bool folder_was_new) {
  if (!fs::is_directory(out)) return;
  if (fs::exists(out / kSnapshotFile) || fs::exists(out / "gates.json")) {
    log::warn("the gate training in {} is kept ({} holds what --resume or apply --gates can use)", out.string(),
              fs::exists(out / kSnapshotFile) ? kSnapshotFile : "gates.json");
    return;
  }
  std::error_code ec;
  for (const auto& name : gate_training_files()) fs::remove(out / name, ec);
  if (folder_was_new && fs::is_empty(out, ec)) fs::remove(out, ec);
}

GateState discard_if_failed(const std::function<GateState()>& train, const fs::path& out, bool folder_was_new,
                            bool discard) {
  try {
    return train();
  } catch (const Interrupted&) {
    throw;
  } catch (...) {
    if (discard) discard_failed_run(out, folder_was_new);
    throw;
  }
}

}  // namespace headprune::pruner
