// Recovering quality after heads are removed, without retraining: a closed-form least-squares
// refit of each layer's attention output on calibration text.
//
// Layer by layer (first to last, each refit seeing the already refitted layers before it), the
// pruned model's attention block is made to reproduce the dense model's contribution to the
// residual stream on the same tokens:
//
//   minimise over θ   Σ_t ‖ f_θ(c_t) − (r_t^dense + O^dense(c_t^dense) − r_t) ‖²  + ridge
//
// where c_t is the pruned layer's context (the kept heads' outputs, concatenated), r_t the
// residual entering its block, and f_θ its output projection. The target also absorbs the drift
// the earlier layers left in the residual stream. Two parameterisations:
//   - kOutput: θ = the output projection's weight and bias (as FLAP and SliceGPT compensate
//     with a least-squares fit of the layer after the removed structure);
//   - kHeadScale: θ = one scale per kept head, multiplying its output-projection columns (Kwon
//     et al. 2022, "A Fast Post-Training Pruning Framework for Transformers", §4.3 mask tuning,
//     solved here as one least-squares problem per layer instead of their LSMR iterations).
// The ridge term pulls θ towards the weights it starts from (ridge × the mean diagonal of the
// normal matrix), so a layer with little evidence stays as it was.
//
// When FFN neurons were removed too (--prune heads,ffn), kOutput refits each layer's FFN block
// the same way after its attention block: c_t is the kept neurons' activation, r_t the residual
// the FFN output is added to, f_θ the FFN output projection (Kwon et al. 2022 tune the FFN
// neurons' mask with their heads'; FLAP fits the output projection's bias). kHeadScale scales
// heads only. Gemma's sandwich norms put a norm between the FFN output and the residual: refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/attention_model.h"

namespace headprune::pruner {

/// What --refit refits.
enum class RefitMethod { kNone, kHeadScale, kOutput };

/// "none", "scale" or "output". @throws headprune::UsageError naming `flag` for anything else.
RefitMethod parse_refit_method(const std::string& name, const std::string& flag);
/// The name parse_refit_method reads.
std::string refit_method_name(RefitMethod method);

/// Settings of a refit.
struct RefitOptions {
  RefitMethod method = RefitMethod::kNone;
  std::size_t max_sequences = 256;  ///< calibration sequences used (the first ones given)
  std::size_t batch_size = 32;
  double ridge = 1e-3;              ///< relative to the mean diagonal of each block's normal matrix
  torch::Device device = torch::kCPU;
};

/// One block's fit: relative squared error ‖f_θ(c) − y‖² / ‖y‖² over the calibration tokens.
struct LayerRefit {
  int64_t layer = 0;
  bool ffn = false;           ///< the layer's FFN block (its output projection), not its attention
  int64_t parameters = 0;     ///< values the fit chose (weight and bias entries, or head scales)
  double error_before = 0;    ///< with the weights surgery left
  double error_after = 0;     ///< with the refitted ones (≤ error_before up to the ridge term)
  /// The regularised normal matrix was singular (no Cholesky factor: heads whose outputs are zero
  /// or repeat other kept heads' on this text, with --refit-ridge 0): the step taken is then the
  /// minimum-norm least-squares one, so values the text cannot determine keep their weights.
  bool singular = false;
  int64_t rank = 0;           ///< rank of the layer's p x p normal matrix (p values per output; p when not singular)
};

/// What a refit did.
struct RefitResult {
  RefitMethod method = RefitMethod::kNone;
  std::size_t sequences = 0;
  int64_t tokens = 0;         ///< real (non-padding) calibration tokens
  double seconds = 0;
  std::vector<LayerRefit> layers;
  nlohmann::json to_json() const;
  /// One line for logs: method, text used, mean relative error before → after, time.
  std::string describe() const;
};

/// Refits `pruned` (in place, no gradients) to follow `dense` on `sequences` (token ids with
/// special tokens; the first options.max_sequences are used), as the file comment describes.
/// Both models must have the same layers and hidden size; `dense` is only read. Logs
/// RefitResult::describe() at info level when it refits (method not kNone), and a warning per
/// layer whose normal matrix was singular (LayerRefit::singular). The result is finite whatever
/// the text: a singular system gets the minimum-norm step, never NaN.
/// @throws headprune::Error if there are no sequences, the models do not match, or a layer has
///         fewer calibration tokens than values to fit per output (give more text, or use
///         the head-scale method).
RefitResult refit_pruned_model(models::AttentionModel& pruned, models::AttentionModel& dense,
                               const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id,
                               const RefitOptions& options);

}  // namespace headprune::pruner
