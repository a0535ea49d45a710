// Writing a pruned model as a checkpoint folder that loads again, here and in transformers 4.x.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// What export wrote, for the summary.
struct ExportResult {
  std::filesystem::path dir;
  std::uintmax_t weights_bytes = 0;
  std::vector<std::string> copied;    ///< tokenizer / sentence-transformers files copied
  std::vector<std::string> skipped;   ///< other-format weights not copied (would be stale)
  std::vector<std::string> warnings;  ///< e.g. zero-head layers older transformers cannot load
};

/// See export_checkpoint's `finish`.
using ExportFinish = std::function<std::map<std::string, std::string>(const std::filesystem::path& tmp,
                                                                      ExportResult& result)>;

/// Writes `checkpoint.model` (and its classifier head, if any) to `out` atomically (temporary
/// folder beside it, then rename); `source` below is `checkpoint.dir`:
///   model.safetensors  every parameter and buffer, keys = the model's own (HF) names
///                      (models::checkpoint_state_dict)
///   config.json        the source config with `pruned_heads` updated (accumulated over
///                      earlier prunings) and a `headprune` key: version, per layer the heads
///                      present before, kept and removed (original indices) and the gate values
///                      folded into the kept heads, plus `record` (the command's settings)
///   <remote code>.py   the family's modelling file for readers without per-layer heads
///                      (ModelFamily::remote_code; BERT: transformers 5), registered in
///                      config.json's `auto_map`
///   everything else in `source` (tokenizer, modules.json, 1_Pooling/, README...) copied,
///   except weights in other formats (*.bin, *.h5, *.msgpack, *.onnx, *.ot, onnx/, openvino/),
///   which would still describe the dense model.
/// `heads_before` are the original indices present per layer before this pruning; `gates`
/// the folded value per kept head (empty entries = 1). `extra_files` (relative path ->
/// content, e.g. "headprune/report.txt") are written inside the same atomic build. `finish`,
/// if given, runs last inside the build with the temporary folder (complete but for what it
/// returns) and the result so far: it may check the folder and returns more files to write
/// (e.g. a summary that needs the written sizes); an exception from it leaves nothing behind.
/// @throws headprune::Error if `out` equals or lies inside `source`, or is a non-empty folder
///         without `force`; nothing is left behind on failure.
ExportResult export_checkpoint(const models::Checkpoint& checkpoint,
                               const std::filesystem::path& out, bool force,
                               const std::vector<std::vector<int64_t>>& heads_before,
                               const std::vector<std::vector<double>>& gates,
                               const nlohmann::json& record,
                               const std::map<std::string, std::string>& extra_files = {},
                               const ExportFinish& finish = {});

}  // namespace headprune::pruner
