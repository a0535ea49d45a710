// The gates folder that `train-gates --out` (and `prune`'s hidden work folder) writes, and the
// rules for writing into one that exists: nothing the user had there is lost.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace headprune::pruner {

struct GateState;

/// The files gate training writes into its folder (gates.json, train_log.jsonl, the snapshot,
/// the fine-tuned weights and their temporary files).
std::vector<std::string> gate_training_files();

/// Makes `out` ready for a gate-training run of `model`:
/// - `out` may not be the model's folder, inside it, or contain it;
/// - with `resume`, it is left as it is (training_run checks the snapshot);
/// - anything in `out` that gate training does not write (another name, a folder, a symbolic
///   link) is refused, with or without `force`: nothing of the user's is replaced;
/// - a folder holding a finished or interrupted run is refused unless `force` (the message
///   says which, and that --resume continues an interrupted one); with `force` its
///   gate_training_files() are removed.
/// @throws headprune::Error saying what to change.
void prepare_gates_folder(const std::filesystem::path& model, const std::filesystem::path& out, bool resume,
                          bool force);

/// Refuses (headprune::Error naming it) anything in `out` that gate training does not write.
void check_gates_folder_replaceable(const std::filesystem::path& out);

/// After a gate-training run failed (not an interruption): removes what it wrote into `out`, and
/// `out` itself if `folder_was_new` and it is left empty, so that the next run starts clean. A
/// run that left a snapshot or gates.json is kept (and the log says so): --resume or apply can
/// use it.
void discard_failed_run(const std::filesystem::path& out, bool folder_was_new);

/// Runs `train`; when it throws anything but an interruption (whose snapshot --resume
/// continues) and `discard` is set, calls discard_failed_run(out, folder_was_new) before the
/// exception goes on.
GateState discard_if_failed(const std::function<GateState()>& train, const std::filesystem::path& out,
                            bool folder_was_new, bool discard);

/// "stopped at step S of T" for an interrupted run in `dir`, or "" when there is none.
std::string interrupted_run(const std::filesystem::path& dir);

}  // namespace headprune::pruner
