// The gates folder that `train-gates --out` (and `prune`'s hidden work folder) writes, and the
// rules for writing into one that exists: nothing the user had there is lost.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace headprune::pruner {

/// The files gate training writes into its folder (gates.json, train_log.jsonl, the snapshot,
/// the fine-tuned weights and their temporary files).
std::vector<std::string> gate_training_files();

/// Makes `out` ready for a gate-training run of `model`:
/// - `out` may not be the model's folder, inside it, or contain it;
/// - with `resume`, it is left as it is (training_run checks the snapshot);
/// - a folder holding a finished or interrupted run is refused unless `force` (the message
///   says which, and that --resume continues an interrupted one);
/// - with `force`, only gate_training_files() are removed; other files stay.
/// Returns the names of files in `out` that gate training did not write (kept), for a warning.
/// @throws headprune::Error saying what to change.
std::vector<std::string> prepare_gates_folder(const std::filesystem::path& model,
                                              const std::filesystem::path& out, bool resume,
                                              bool force);

/// "stopped at step S of T" for an interrupted run in `dir`, or "" when there is none.
std::string interrupted_run(const std::filesystem::path& dir);

}  // namespace headprune::pruner
