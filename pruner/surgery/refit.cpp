#include "pruner/surgery/refit.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/format.h"
#include "pruner/log.h"
#include "pruner/text/corpus.h"

namespace headprune::pruner {
namespace {

using models::AttentionModel;
using models::ModelInputs;

/// One block a refit fits: layer `layer`'s attention block, or its FFN block.
struct Block {
  int64_t layer = 0;
  bool ffn = false;
};

/// The block's output projection in `model` (attention output or FFN output).
models::Linear projection_of(const AttentionModel& model, Block b) {
  return b.ffn ? model.ffn_output_projection(b.layer) : model.output_projection(b.layer);
}

/// The block's recorded input and context in a forward pass's output.
const models::AttentionBlockIO& io_of(const models::ModelOutput& out, Block b) {
  return (b.ffn ? out.ffn_io : out.attention_io).at(static_cast<std::size_t>(b.layer));
}

/// One batch of one block over its real tokens (float64): the pruned block's context [n, m]
/// and the target y = r^dense + O^dense(c^dense) − r [n, H].
struct LayerSample {
  torch::Tensor context;
  torch::Tensor target;
};

/// r^dense + O^dense(c^dense) [B, T, H] of every block of `dense` for one batch (the attention
/// blocks, then with `ffn` the FFN blocks): the part of the blocks' targets that no refit changes.
std::vector<torch::Tensor> dense_outputs(AttentionModel& dense, const ModelInputs& in, bool ffn) {
  std::vector<torch::Tensor> out;
  const auto pass = dense.forward(in, nullptr);
  const auto layers = dense.config().num_hidden_layers;
  for (bool f : {false, true}) {
    if (f && !ffn) break;
    for (int64_t l = 0; l < layers; ++l) {
      const auto& io = io_of(pass, {l, f});
      out.push_back(projection_of(dense, {l, f})->forward(io.context) + io.residual);
    }
  }
  return out;
}

/// Largest cache of dense outputs kept for a refit (bytes): above it they are recomputed per layer.
constexpr int64_t kDenseCacheBytes = int64_t{2} << 30;

/// Per batch, dense_outputs (one dense pass per batch instead of one per batch and layer), when
/// they fit in kDenseCacheBytes; else empty.
std::vector<std::vector<torch::Tensor>> cached_dense_outputs(AttentionModel& dense, const std::vector<ModelInputs>& batches,
                                                             bool ffn) {
  const auto& c = dense.config();
  int64_t bytes = 0;
  for (const auto& in : batches)
    bytes += in.input_ids.numel() * c.hidden_size * c.num_hidden_layers * 4 * (ffn ? 2 : 1);
  std::vector<std::vector<torch::Tensor>> out;
  if (bytes > kDenseCacheBytes) return out;
  for (const auto& in : batches) out.push_back(dense_outputs(dense, in, ffn));
  return out;
}

/// `cached`: dense_outputs of this batch (with the FFN blocks when b is one), or null to compute them.
LayerSample layer_sample(AttentionModel& pruned, AttentionModel& dense, const ModelInputs& in, Block b,
                         const std::vector<torch::Tensor>* cached) {
  const auto slot = static_cast<std::size_t>(b.layer + (b.ffn ? dense.config().num_hidden_layers : 0));
  const auto dense_part = cached ? cached->at(slot) : dense_outputs(dense, in, b.ffn).at(slot);
  const auto pass = pruned.forward(in, nullptr);
  const auto& p = io_of(pass, b);
  const auto real = in.attention_mask.reshape({-1}).to(torch::kBool);
  auto flat = [&](const torch::Tensor& t) {
    return t.reshape({t.size(0) * t.size(1), t.size(2)}).index({real}).to(torch::kDouble);
  };
  return {flat(p.context), flat(dense_part - p.residual)};
}

/// A least-squares problem in θ [p, q]: E(θ) = tr(θᵀGθ) − 2 tr(θᵀC) + Σ‖y'‖², started at θ0,
/// where y' is the part of the target y the fitted values must produce (y less a fixed bias).
struct NormalEquations {
  torch::Tensor gram;   ///< G [p, p]
  torch::Tensor cross;  ///< C [p, q]
  double fitted_squared = 0;  ///< Σ‖y'‖²
  double target_squared = 0;  ///< Σ‖y‖², what errors are relative to
  int64_t tokens = 0;

  void add(const torch::Tensor& g, const torch::Tensor& c, const torch::Tensor& fitted, const torch::Tensor& target) {
    gram = gram.defined() ? gram + g : g;
    cross = cross.defined() ? cross + c : c;
    fitted_squared += fitted.square().sum().item<double>();
    target_squared += target.square().sum().item<double>();
    tokens += target.size(0);
  }
  double relative_error(const torch::Tensor& theta) const {
    const double e = (theta * gram.matmul(theta)).sum().item<double>() -
                     2 * (theta * cross).sum().item<double>() + fitted_squared;
    return target_squared > 0 ? std::max(e, 0.0) / target_squared : 0.0;
  }
  /// θ0 + Δ with (G + λI)Δ = C − Gθ0, λ = ridge × mean diag(G): the ridge pulls towards θ0.
  /// Solved by Cholesky (G + λI is symmetric positive semi-definite); when it has no factor
  /// (singular: a zero or repeated input and λ = 0) or the solution is not finite, Δ is the
  /// minimum-norm least-squares solution (SVD, LAPACK gelsd, on the CPU) and `singular` is set.
  struct Solution {
    torch::Tensor theta;
    bool singular = false;
    int64_t rank = 0;
  };
  Solution solve(const torch::Tensor& theta0, double ridge) const {
    const double lambda = ridge * gram.diagonal().mean().item<double>();
    const auto a = gram + lambda * torch::eye(gram.size(0), gram.options());
    const auto b = cross - gram.matmul(theta0);
    const auto [factor, info] = torch::linalg_cholesky_ex(a);
    if (info.item<int64_t>() == 0) {
      auto theta = theta0 + torch::cholesky_solve(b, factor);
      if (torch::isfinite(theta).all().item<bool>()) return {theta, false, a.size(0)};
    }
    // gelsd's default cut-off treats singular values below p · ε · σ_max as zero.
    const auto [delta, residuals, rank, values] = torch::linalg_lstsq(a.cpu(), b.cpu(), c10::optional<double>(), "gelsd");
    return {theta0 + delta.to(theta0.device()), true, rank.item<int64_t>()};
  }
};

/// The output projection's weight and bias as θ = [Wᵀ; bᵀ] ([m (+1), H]), fitted on z = [c, 1].
struct OutputFit {
  models::Linear projection;
  bool bias() const { return projection->bias.defined(); }
  torch::Tensor theta0() const {
    auto w = projection->weight.detach().t().to(torch::kDouble);
    return bias() ? torch::cat({w, projection->bias.detach().to(torch::kDouble).unsqueeze(0)}) : w;
  }
  void add(NormalEquations& eq, const LayerSample& s) const {
    auto z = bias() ? torch::cat({s.context, torch::ones({s.context.size(0), 1}, s.context.options())}, 1)
                    : s.context;
    eq.add(z.t().matmul(z), z.t().matmul(s.target), s.target, s.target);
  }
  void write(const torch::Tensor& theta) const {
    const int64_t m = projection->weight.size(1);
    projection->weight.detach().copy_(theta.slice(0, 0, m).t());
    if (bias()) projection->bias.detach().copy_(theta[m]);
  }
};

/// One scale per kept head on its output-projection columns, θ [k, 1], fitted on each head's
/// contribution u_h = W_h c_h [H] to the target minus the (unchanged) bias.
struct HeadScaleFit {
  models::Linear projection;
  int64_t head_dim;
  int64_t heads() const { return projection->weight.size(1) / head_dim; }
  torch::Tensor theta0() const { return torch::ones({heads(), 1}, torch::kDouble); }
  void add(NormalEquations& eq, const LayerSample& s) const {
    const int64_t n = s.context.size(0), H = projection->weight.size(0);
    auto w = projection->weight.detach().to(torch::kDouble).view({H, heads(), head_dim});
    auto u = torch::einsum("nkd,hkd->nkh", {s.context.view({n, heads(), head_dim}), w});
    auto y = projection->bias.defined() ? s.target - projection->bias.detach().to(torch::kDouble) : s.target;
    eq.add(torch::einsum("nkh,njh->kj", {u, u}), torch::einsum("nkh,nh->k", {u, y}).unsqueeze(1), y, s.target);
  }
  void write(const torch::Tensor& theta) const {
    const int64_t H = projection->weight.size(0);
    auto w = projection->weight.detach().view({H, heads(), head_dim});
    // In float32 at least, then rounded once to a narrow weight's dtype (WeightStorage::source).
    const auto wide = at::promote_types(w.scalar_type(), torch::kFloat);
    w.copy_(w.to(wide) * theta.to(wide).view({1, heads(), 1}));
  }
};

/// Accumulates block `block` over the batches, solves, writes the fit into `pruned`. An FFN
/// block with more values per output than the text has tokens keeps its weights, with a warning.
template <typename Fit>
LayerRefit refit_layer(const Fit& fit, AttentionModel& pruned, AttentionModel& dense,
                       const std::vector<ModelInputs>& batches, const std::vector<std::vector<torch::Tensor>>& cached,
                       Block block, double ridge) {
  NormalEquations eq;
  for (std::size_t b = 0; b < batches.size(); ++b)
    fit.add(eq, layer_sample(pruned, dense, batches[b], block, cached.empty() ? nullptr : &cached[b]));
  const auto theta0 = fit.theta0();
  const auto layer = block.layer;
  LayerRefit done;
  done.layer = layer;
  done.ffn = block.ffn;
  done.parameters = theta0.numel();
  done.error_before = done.error_after = eq.relative_error(theta0);
  if (theta0.size(0) == 0) return done;  // no heads and no bias: nothing to fit
  if (eq.tokens < theta0.size(0) && block.ffn) {
    log::warn("refit layer {}'s FFN: {} values per output to fit but the calibration text has only {} tokens; its "
              "output projection keeps its weights (give more text with --refit-sequences)",
              layer, theta0.size(0), eq.tokens);
    done.parameters = 0;
    return done;
  }
  if (eq.tokens < theta0.size(0))
    throw Error(fmt::format("--refit: layer {} has {} values per output to fit but the calibration text "
                            "has only {} tokens; give more text, or use --refit scale",
                            layer, theta0.size(0), eq.tokens));
  const auto solution = eq.solve(theta0, ridge);
  done.error_after = eq.relative_error(solution.theta);
  done.singular = solution.singular;
  done.rank = solution.rank;
  if (done.singular)
    log::warn("refit layer {}: the normal matrix is singular (rank {} of {}: kept heads whose outputs are zero or "
              "repeat others' on this text); took the minimum-norm least-squares step, so what the text cannot "
              "determine keeps its weights (a --refit-ridge above 0 does the same smoothly)",
              layer, done.rank, theta0.size(0));
  fit.write(solution.theta);
  return done;
}

std::vector<ModelInputs> calibration_batches(const std::vector<std::vector<int64_t>>& sequences,
                                             int64_t pad_id, const RefitOptions& o) {
  const auto n = std::min(sequences.size(), o.max_sequences);
  const std::vector<std::vector<int64_t>> used(sequences.begin(), sequences.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<ModelInputs> batches;
  for (const auto& bucket : length_buckets(used, o.batch_size))
    batches.push_back(make_inputs(used, bucket, pad_id, o.device));
  return batches;
}

/// Turns on attention-io recording for the scope of a refit.
class IoRecording {
 public:
  explicit IoRecording(AttentionModel& model) : model_(model) { model_.set_record_attention_io(true); }
  ~IoRecording() { model_.set_record_attention_io(false); }
  IoRecording(const IoRecording&) = delete;
  IoRecording& operator=(const IoRecording&) = delete;

 private:
  AttentionModel& model_;
};

void check_same_shape(const AttentionModel& pruned, const AttentionModel& dense) {
  const auto& a = pruned.config();
  const auto& b = dense.config();
  if (a.num_hidden_layers != b.num_hidden_layers || a.hidden_size != b.hidden_size)
    throw Error(fmt::format("--refit: the pruned model ({} layers, hidden {}) does not match the dense one "
                            "({} layers, hidden {})",
                            a.num_hidden_layers, a.hidden_size, b.num_hidden_layers, b.hidden_size));
}

/// --refit output with fewer than kTokensPerValue calibration tokens per value of its widest
/// block's output: the fit follows the text more than the model (docs/results.md: MiniLM's FFN
/// refit on 2,382 tokens for up to 1,473 values per output lost 6 STS-B points; on 36,101 it won 1).
constexpr int64_t kTokensPerValue = 10;

void warn_if_few_tokens(const RefitResult& result, int64_t hidden_size) {
  if (result.method != RefitMethod::kOutput) return;
  int64_t widest = 0;
  for (const auto& l : result.layers) widest = std::max(widest, l.parameters / hidden_size);
  if (widest == 0 || result.tokens >= kTokensPerValue * widest) return;
  log::warn("refit (output): {} calibration tokens for up to {} values per output; the fit may follow this text "
            "rather than the model (its error is reported on the same text). Give more text with --refit-sequences "
            "(about {} tokens), or use --refit scale",
            result.tokens, widest, kTokensPerValue * widest);
}

}  // namespace

RefitMethod parse_refit_method(const std::string& name, const std::string& flag) {
  if (name == "none") return RefitMethod::kNone;
  if (name == "scale") return RefitMethod::kHeadScale;
  if (name == "output") return RefitMethod::kOutput;
  throw UsageError(fmt::format("{} {}: expected none, scale (one factor per kept head) or output "
                               "(the attention output projection, and the FFN's when FFN neurons were removed)",
                               flag, name));
}

std::string refit_method_name(RefitMethod method) {
  switch (method) {
    case RefitMethod::kHeadScale: return "scale";
    case RefitMethod::kOutput: return "output";
    case RefitMethod::kNone: break;
  }
  return "none";
}

RefitResult refit_pruned_model(AttentionModel& pruned, AttentionModel& dense,
                               const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id,
                               const RefitOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  RefitResult result;
  result.method = options.method;
  if (options.method == RefitMethod::kNone) return result;
  if (sequences.empty()) throw Error("--refit needs calibration text, and none was given");
  check_same_shape(pruned, dense);
  // FFN neurons removed: with `output` each layer's FFN output projection is refit too.
  const bool ffn_removed = pruned.config().intermediate_sizes != dense.config().intermediate_sizes;
  const bool ffn = options.method == RefitMethod::kOutput && ffn_removed;
  if (ffn && pruned.config().sandwich_norms)
    throw Error("--refit output: the FFN neurons removed would be refit through Gemma's post-feed-forward norm, "
                "which least squares on the output projection does not model; use --refit scale (heads only)");
  torch::NoGradGuard no_grad;
  const auto batches = calibration_batches(sequences, pad_id, options);
  result.sequences = std::min(sequences.size(), options.max_sequences);
  for (const auto& in : batches) result.tokens += in.attention_mask.sum().item<int64_t>();
  IoRecording record_pruned(pruned), record_dense(dense);
  const auto layers = pruned.config().num_hidden_layers;
  log::info("refit ({}): {} layers on {} calibration sequences ({} tokens); each layer runs the pruned model "
            "over them again",
            refit_method_name(options.method), layers, result.sequences, result.tokens);
  if (options.method == RefitMethod::kHeadScale && ffn_removed)
    log::info("refit (scale): one factor per kept head; the FFN output projections are refit by --refit output");
  const auto cached = cached_dense_outputs(dense, batches, ffn);
  for (int64_t l = 0; l < layers; ++l) {
    const auto projection = pruned.output_projection(l);
    auto layer = options.method == RefitMethod::kOutput
        ? refit_layer(OutputFit{projection}, pruned, dense, batches, cached, {l, false}, options.ridge)
        : refit_layer(HeadScaleFit{projection, pruned.config().head_dim}, pruned, dense, batches, cached,
                      {l, false}, options.ridge);
    result.layers.push_back(layer);
    if (ffn) {
      result.layers.push_back(
          refit_layer(OutputFit{pruned.ffn_output_projection(l)}, pruned, dense, batches, cached, {l, true},
                      options.ridge));
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log::info("refit layer {:>3}/{}: {} values, relative error {:.4f} -> {:.4f}{} | ETA {}", l + 1, layers,
              layer.parameters, layer.error_before, layer.error_after,
              ffn ? fmt::format("; FFN {:.4f} -> {:.4f}", result.layers.back().error_before,
                                result.layers.back().error_after)
                  : "",
              human_duration(elapsed / static_cast<double>(l + 1) * static_cast<double>(layers - l - 1)));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("{}", result.describe());
  warn_if_few_tokens(result, pruned.config().hidden_size);
  return result;
}

nlohmann::json RefitResult::to_json() const {
  nlohmann::json layers_json = nlohmann::json::array();
  for (const auto& l : layers)
    layers_json.push_back({{"layer", l.layer}, {"block", l.ffn ? "ffn" : "attention"}, {"parameters", l.parameters},
                           {"relative_error_before", l.error_before}, {"relative_error_after", l.error_after},
                           {"singular", l.singular}, {"rank", l.rank}});
  return {{"method", refit_method_name(method)}, {"sequences", sequences}, {"tokens", tokens},
          {"seconds", seconds}, {"layers", layers_json}};
}

std::string RefitResult::describe() const {
  // Per kind of block: the mean relative error over layers before and after (0 -> 0 for none).
  const auto mean = [this](bool ffn) {
    double before = 0, after = 0, n = 0;
    for (const auto& l : layers)
      if (l.ffn == ffn) before += l.error_before, after += l.error_after, n += 1;
    return std::pair{before / std::max(n, 1.0), after / std::max(n, 1.0)};
  };
  const auto [before, after] = mean(false);
  const bool ffn = std::any_of(layers.begin(), layers.end(), [](const LayerRefit& l) { return l.ffn; });
  const auto [ffn_before, ffn_after] = mean(true);
  return fmt::format("refit ({}) on {} sequences ({} tokens): attention-output error relative to the dense "
                     "model, mean over layers {:.4f} -> {:.4f}{} ({:.1f} s)",
                     refit_method_name(method), sequences, tokens, before, after,
                     ffn ? fmt::format("; FFN-output error {:.4f} -> {:.4f}", ffn_before, ffn_after) : "",
                     seconds);
}

}  // namespace headprune::pruner
