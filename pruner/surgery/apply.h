// `headprune apply`: surgery + export + reload check, shared by `apply` and `prune`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/surgery/export.h"
#include "pruner/surgery/surgery.h"

namespace headprune::pruner {

/// Sizes before and after, and the reload check.
struct ApplyResult {
  ExportResult exported;
  int64_t heads_before = 0, heads_after = 0;
  int64_t params_before = 0, params_after = 0;
  /// Query part of a head (Q rows + bias, O columns; models/head_costs.h). Its K/V rows go with
  /// its KV head, counted in kv_heads_removed (BERT: one KV head per head).
  int64_t params_per_head = 0;
  int64_t kv_heads_removed = 0;        ///< KV heads that lost their last query head (BERT: = heads removed)
  int64_t params_per_kv_head = 0;
  /// FFN neurons removed over all layers (--prune heads,ffn), and what each held
  /// (models::params_per_ffn_neuron); per layer the FFN widths before and after.
  int64_t ffn_neurons_removed = 0;
  int64_t params_per_ffn_neuron = 0;
  std::vector<int64_t> ffn_widths_before, ffn_widths_after;      ///< K and V rows (+ biases) of one KV head (models/head_costs.h)
  /// The folders' .safetensors files (a single-file source: its tensors as the export writes them).
  std::uintmax_t bytes_before = 0, bytes_after = 0;
  std::string weights_dtypes;           ///< the weights' dtypes, the same before and after ("Float")
  double reload_max_abs_diff = 0;       ///< exported folder vs in-memory pruned model
  std::vector<std::vector<int64_t>> heads_present_before;  ///< original indices per layer
  std::vector<std::vector<double>> folded_gates;           ///< per layer, per kept head
  std::vector<int64_t> layers_removed;  ///< whole layers removed (drop_layers_in_memory), before-numbering
  nlohmann::json to_json() const;
  /// Multi-line human summary incl. "shrank by exactly N heads x P parameters".
  std::string describe() const;
};

/// Applies `plan` to `checkpoint.model` in place, exports it to `out` (see export_checkpoint),
/// reloads the folder and checks it computes exactly what the in-memory model does.
/// @throws headprune::Error on a bad plan, an export failure, or a reload mismatch.
ApplyResult apply_and_export(models::Checkpoint& checkpoint, const PrunePlan& plan,
                             const std::filesystem::path& out, bool force,
                             const nlohmann::json& record, const torch::Device& device);

/// The two halves of apply_and_export, for callers that measure between them (`prune`):
/// surgery only (fills everything but the export fields of ApplyResult) ...
ApplyResult apply_in_memory(models::Checkpoint& checkpoint, const PrunePlan& plan);
/// Surgery of whole layers instead of heads (the layer-dropping baseline): removes `layers`
/// (indices of the current layers) with AttentionModel::drop_layers and fills the result as
/// apply_in_memory does; heads_present_before lists the kept layers' heads, in their new order.
/// @throws headprune::Error on a bad layer list (nothing changed then).
ApplyResult drop_layers_in_memory(models::Checkpoint& checkpoint, const std::vector<int64_t>& layers);
/// ... then export + reload check, both inside one atomic folder build: the folder appears only
/// once it reloads to exactly the in-memory model. `extra_files` go into the same build, and so
/// do the files `late_files` returns, given the complete result (sizes, reload check).
using LateFiles = std::function<std::map<std::string, std::string>(const ApplyResult&)>;
void export_and_verify(ApplyResult& result, models::Checkpoint& checkpoint,
                       const std::filesystem::path& out, bool force, const nlohmann::json& record,
                       const torch::Device& device,
                       const std::map<std::string, std::string>& extra_files = {},
                       const LateFiles& late_files = {});

}  // namespace headprune::pruner
