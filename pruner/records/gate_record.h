// The result of gate training as data: what a gates folder's gates.json holds
// (docs/formats.md, "gates.json"). No tensor library is involved, so that the file's parser can
// be fuzzed on its own; pruner/records/gate_state.h adds what needs a model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headprune::pruner {

/// Identity of the model some gates belong to; `apply` refuses gates for another model.
struct ModelFingerprint {
  std::string model_type;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t hidden_size = 0;
  std::vector<std::vector<int64_t>> kept_heads;  ///< original head indices present per layer
  double weights_checksum = 0;                   ///< Σ|w| over all parameters, in double

  nlohmann::json to_json() const;
  static ModelFingerprint from_json(const nlohmann::json& j);
  /// Empty if equal, else a sentence saying what differs.
  std::string difference(const ModelFingerprint& other) const;
};

/// Per-layer gate values and the final keep decision.
struct LayerGates {
  std::vector<int64_t> heads;      ///< original indices of the layer's heads (before this run)
  std::vector<double> log_alpha;   ///< per head
  std::vector<double> gate;        ///< deterministic gate value in [0,1] per head
  std::vector<bool> keep;          ///< final keep-mask per head
  std::vector<int64_t> kept() const;         ///< original indices kept
  std::vector<int64_t> removed_local() const;  ///< positions (0-based, in `heads`) removed
};

/// One layer's FFN gates (--prune heads,ffn): blocks of `block` consecutive neurons over the
/// `width` neurons the layer held when the run started (positions 0..width-1).
struct FfnLayerGates {
  int64_t width = 0;
  int64_t block = 1;
  std::vector<double> log_alpha;   ///< per block
  std::vector<double> gate;        ///< deterministic gate value in [0,1] per block
  std::vector<bool> keep;          ///< final keep-mask per block
  int64_t kept_width() const;
  /// Positions (0-based, among the `width`) of the neurons of removed blocks, ascending.
  std::vector<int64_t> removed_neurons() const;
  /// The gate value of each neuron (its block's), [width] values.
  std::vector<double> neuron_gates() const;
};

/// A gates folder's content.
struct GateState {
  /// Format 2 adds `ffn` (FFN gates); a file without them is written as format 1, which every
  /// earlier headprune reads alike.
  static constexpr int kFormatVersion = 2;
  /// Name, inside the gates folder, of the fine-tuned weights `--train-weights` writes.
  static constexpr const char* kWeightsFile = "weights.safetensors";
  ModelFingerprint model;          ///< the model the run started from
  /// With `--train-weights`: the fine-tuned model the gates belong to (its weights are in
  /// kWeightsFile); unset when only the gates trained.
  std::optional<ModelFingerprint> trained_model;
  std::string model_path;          ///< where the model was loaded from (informational)
  std::vector<LayerGates> layers;
  std::vector<FfnLayerGates> ffn;  ///< per layer with FFN gates, else empty
  nlohmann::json settings;         ///< the training settings used
  nlohmann::json summary;          ///< final metrics (expected L0, sparsity, losses, ...)
  int64_t step = 0;                ///< training steps done
  bool complete = false;           ///< false for a periodic snapshot of an unfinished run

  int64_t heads_total() const;
  int64_t heads_kept() const;

  nlohmann::json to_json() const;
  /// @throws headprune::Error naming the key at fault.
  static GateState from_json(const nlohmann::json& j, const std::string& source);

  /// Writes `<dir>/gates.json` atomically (creating dir).
  void save(const std::filesystem::path& dir) const;
  /// Reads `<dir>/gates.json`. @throws headprune::Error if absent or malformed.
  static GateState load(const std::filesystem::path& dir);

  /// The fingerprint the gates must be applied to: trained_model if set, else model.
  const ModelFingerprint& applies_to() const { return trained_model ? *trained_model : model; }
};

}  // namespace headprune::pruner
