// `headprune report`: which heads survive, as a table, JSON and an SVG picture.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pruner/records/gate_state.h"

namespace headprune::pruner {

/// Per original head of one layer: was it there before, is it kept, and its gate value.
struct LayerReport {
  std::vector<bool> present;            ///< [num_attention_heads] present before this pruning
  std::vector<bool> kept;               ///< [num_attention_heads]
  std::vector<std::optional<double>> gate;  ///< [num_attention_heads]; empty if unknown
  /// [num_attention_heads] each head's roles from `prune --analyze` (headprune/head_roles.json,
  /// measured on the model before this pruning); empty when not analysed.
  std::vector<std::vector<std::string>> roles;
  std::vector<int64_t> kept_indices() const;
};

/// The surviving heads of a whole model.
struct HeadReport {
  std::string source;                   ///< the folder reported on
  int64_t num_attention_heads = 0;      ///< original heads per layer
  std::vector<LayerReport> layers;
  /// Set when the gates had not converged (GateState summary "convergence_warning").
  std::string warning;
  /// Decoders reported from a checkpoint: KV-cache numbers one token adds (2 × KV heads ×
  /// head_dim, summed over layers; models/kv_cache.h) in the model first pruned and now. Only
  /// whole KV groups shrink it. 0 when unknown (encoders, gates folders).
  int64_t kv_values_per_token_original = 0, kv_values_per_token = 0;
  /// FFN neurons per layer in the model first pruned and now (gates: each layer's width and the
  /// width its kept blocks leave). Empty when no FFN neuron was removed.
  std::vector<int64_t> ffn_widths_original, ffn_widths;
  int64_t heads_total() const;          ///< original heads over all layers
  int64_t heads_kept() const;
};

/// From a gates folder's state.
HeadReport report_from_gates(const GateState& state, const std::string& source);
/// From a checkpoint folder: kept heads from config.json's pruned_heads, gate values from the
/// `headprune` key that `headprune apply` writes (absent for other checkpoints), each head's
/// roles from headprune/head_roles.json when `prune --analyze` wrote it.
/// @throws headprune::Error if the folder has no valid config.json.
HeadReport report_from_checkpoint(const std::filesystem::path& dir);
/// Either of the above, by what the folder holds (gates.json or config.json).
HeadReport load_report(const std::filesystem::path& dir);

/// {"source", "num_attention_heads", "heads_total", "heads_kept", "heads_per_layer",
///  "layers": [{"layer", "kept": [original indices], "removed": [...], "gate": [per head|null],
///              "roles": [per head: [role, ...]] (only when analysed)}],
///  "warning" (only when set),
///  "kv_cache_values_per_token": {"original", "kept"} (decoder checkpoints only),
///  "ffn_widths": {"original": [per layer], "kept": [per layer]} (only when FFN neurons were removed)}
nlohmann::json to_json(const HeadReport& r);
/// Plain-text table, one row per layer: a cell per head ('#' kept with its gate, '.' removed,
/// ' ' absent before), then the kept indices; when analysed, each layer's kept and removed
/// heads with their roles, and the heads per role kept and removed; for a decoder checkpoint,
/// the KV cache per token before and after (bytes at F16); the FFN widths per layer when FFN
/// neurons were removed. Readable without colour.
std::string to_text(const HeadReport& r);
/// Standalone SVG: layers x heads heat-map (gate value as colour, removed heads crossed out),
/// a bar of heads kept per layer, and one of FFN neurons kept when FFN neurons were removed.
std::string to_svg(const HeadReport& r);

}  // namespace headprune::pruner
