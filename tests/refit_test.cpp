// The closed-form refit after head removal (pruner/surgery/refit.h, issue 17 item 7), on the
// real all-MiniLM-L6-v2 and stories260K with real text.
//
// What is checked against an independent computation: each layer's reported error is the error
// the refitted model really makes (a forward pass through the written weights), and the output
// refit is as good as the least-squares solution a QR factorisation of the stacked data gives.
// Tolerance: the reported error is computed in float64 from the same float32 activations; the
// measured one recomputes the output projection in float32 with float32-rounded weights, so
// each output differs by at most δ = float32_tolerance(max|O(c)|, 1, inputs + 1) (Higham's
// bound for one dot product, tests/tolerance.h). For e = O(c) − y that changes ‖e‖²/‖y‖² by at
// most 2‖e‖·‖δ‖/‖y‖² + ‖δ‖²/‖y‖², with ‖δ‖ ≤ δ·√(tokens·hidden).
#include <cmath>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/surgery/refit.h"
#include "pruner/surgery/surgery.h"
#include "pruner/text/corpus.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace {

/// Real text: the first lines of WikiText-2 (test split), at most 64 tokens each.
pruner::Corpus wikitext(const models::Tokenizer& tokenizer, std::size_t lines) {
  pruner::CorpusOptions o;
  o.max_length = 64;
  o.max_lines = lines;
  o.holdout_fraction = 0.1;
  return pruner::load_corpus({testing::shared_data_dir() / "corpus" / "wikitext2_raw_test.raw"}, tokenizer, o);
}

std::vector<models::ModelInputs> batches_of(const pruner::Corpus& corpus, std::size_t n) {
  const std::vector<std::vector<int64_t>> used(corpus.train.begin(),
                                               corpus.train.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<models::ModelInputs> out;
  for (const auto& b : pruner::length_buckets(used, 32)) out.push_back(pruner::make_inputs(used, b, corpus.pad_id, torch::kCPU));
  return out;
}

/// Each layer of `pruned` as it computes: Σ‖O(c) + r − (O_d(c_d) + r_d)‖² / Σ‖O_d(c_d) + r_d − r‖²
/// over real tokens, and the tolerance of comparing it with the refit's float64 figure.
struct Measured {
  double error = 0;
  double tolerance = 0;
};

std::vector<Measured> measure(models::AttentionModel& pruned, models::AttentionModel& dense,
                              const std::vector<models::ModelInputs>& batches, bool ffn = false) {
  // The attention blocks, or with `ffn` the FFN blocks (ModelOutput::ffn_io, the FFN output projection).
  const auto io = [ffn](const models::ModelOutput& o) { return ffn ? o.ffn_io : o.attention_io; };
  const auto projection = [ffn](const models::AttentionModel& m, int64_t l) {
    return ffn ? m.ffn_output_projection(l) : m.output_projection(l);
  };
  torch::NoGradGuard no_grad;
  pruned.set_record_attention_io(true);
  dense.set_record_attention_io(true);
  const auto layers = static_cast<std::size_t>(pruned.config().num_hidden_layers);
  std::vector<double> e2(layers), y2(layers), scale(layers);
  int64_t values = 0;
  for (const auto& in : batches) {
    const auto d = io(dense.forward(in, nullptr));
    const auto p = io(pruned.forward(in, nullptr));
    const auto real = in.attention_mask.unsqueeze(-1).to(torch::kDouble);
    values += in.attention_mask.sum().item<int64_t>() * pruned.config().hidden_size;
    for (std::size_t l = 0; l < layers; ++l) {
      const auto layer = static_cast<int64_t>(l);
      const auto out = projection(pruned, layer)->forward(p[l].context);
      const auto y = (projection(dense, layer)->forward(d[l].context) + d[l].residual - p[l].residual)
                         .to(torch::kDouble);
      e2[l] += ((out.to(torch::kDouble) - y).square() * real).sum().item<double>();
      y2[l] += (y.square() * real).sum().item<double>();
      scale[l] = std::max(scale[l], out.abs().max().item<double>());
    }
  }
  pruned.set_record_attention_io(false);
  dense.set_record_attention_io(false);
  std::vector<Measured> out;
  for (std::size_t l = 0; l < layers; ++l) {
    const auto inputs = projection(pruned, static_cast<int64_t>(l))->weight.size(1) + 1;
    const double delta = testing::float32_tolerance(scale[l], 1, inputs) * std::sqrt(static_cast<double>(values));
    out.push_back({e2[l] / y2[l], (2 * std::sqrt(e2[l]) * delta + delta * delta) / y2[l]});
  }
  return out;
}

/// Every layer's reported error is the one measured, and no higher than before the fit; layer 0
/// (the same input in both models) improves beyond rounding — a no-op fit would fail that.
void check_reported_errors(const std::vector<pruner::LayerRefit>& layers, const std::vector<Measured>& measured) {
  CATCH_REQUIRE(layers.size() == measured.size());
  for (const auto& layer : layers) {
    CATCH_INFO("layer " << layer.layer);
    const auto& m = measured[static_cast<std::size_t>(layer.layer)];
    CATCH_CHECK(std::abs(m.error - layer.error_after) <= m.tolerance);
    CATCH_CHECK(layer.error_after <= layer.error_before + m.tolerance);
  }
  CATCH_CHECK(layers[0].error_after < layers[0].error_before - 10 * measured[0].tolerance);
}

void check_reported_errors(const pruner::RefitResult& result, const std::vector<Measured>& measured) {
  check_reported_errors(result.layers, measured);
}

// 48 sequences of at most 64 tokens: over 2,000 real tokens, several times the 289 values per
// output that layer 0's output fit solves for.
constexpr std::size_t kSequences = 48;

pruner::RefitOptions refit_options(pruner::RefitMethod method, std::size_t sequences) {
  pruner::RefitOptions o;
  o.method = method;
  o.max_sequences = sequences;
  o.ridge = 0;  // the exact least-squares solution, to compare with QR
  return o;
}

}  // namespace

CATCH_TEST_CASE("refit: each layer's reported error is what the refitted MiniLM computes, and lower",
                "[refit][minilm]") {
  auto dense = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const auto corpus = wikitext(*dense.tokenizer, 300);
  CATCH_REQUIRE(corpus.train.size() >= kSequences);
  const auto batches = batches_of(corpus, kSequences);
  for (auto method : {pruner::RefitMethod::kOutput, pruner::RefitMethod::kHeadScale}) {
    CATCH_INFO("method " << pruner::refit_method_name(method));
    auto model = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
    pruner::apply_plan(*model.model, pruner::plan_from_remove_heads(testing::kUnevenRemoval, model.model->config()));
    const auto result = pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id,
                                                   refit_options(method, kSequences));
    CATCH_CHECK(result.sequences == kSequences);
    check_reported_errors(result, measure(*model.model, *dense.model, batches));
    // Output: layer 0's 9 heads x 32 inputs + bias, per output; layer 2 (no heads) its bias alone.
    // Scale: one value per kept head.
    const bool output = method == pruner::RefitMethod::kOutput;
    CATCH_CHECK(result.layers[0].parameters == (output ? (9 * 32 + 1) * 384 : 9));
    CATCH_CHECK(result.layers[2].parameters == (output ? 384 : 0));
  }
}

CATCH_TEST_CASE("refit output with FFN neurons removed: every attention and FFN block's reported error is real",
                "[refit][minilm][ffn]") {
  auto dense = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const auto corpus = wikitext(*dense.tokenizer, 300);
  const auto batches = batches_of(corpus, kSequences);
  auto model = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  pruner::apply_plan(*model.model, pruner::plan_from_remove_heads(testing::kUnevenRemoval, model.model->config()));
  std::vector<int64_t> removed;  // 1024 of 1536 neurons in every layer: 513 values per output, < the tokens
  for (int64_t i = 0; i < 1536; i += 3) removed.insert(removed.end(), {i, i + 1});
  for (int64_t l = 0; l < 6; ++l) model.model->prune_ffn(l, removed, {});
  const auto result = pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id,
                                                 refit_options(pruner::RefitMethod::kOutput, kSequences));
  CATCH_REQUIRE(result.layers.size() == 12);  // per layer its attention block, then its FFN block
  std::vector<pruner::LayerRefit> attention, ffn;
  for (const auto& layer : result.layers) (layer.ffn ? ffn : attention).push_back(layer);
  CATCH_CHECK(ffn.at(0).parameters == (512 + 1) * 384);
  // Measured on the model as refitted: the FFN blocks' errors are what their projections now compute.
  check_reported_errors(ffn, measure(*model.model, *dense.model, batches, true));
  check_reported_errors(attention, measure(*model.model, *dense.model, batches));
  CATCH_CHECK(result.to_json()["layers"][1]["block"] == "ffn");
  CATCH_CHECK_THAT(result.describe(), Catch::Contains("FFN-output error"));
  // --refit scale fits the heads only.
  auto scaled = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  for (int64_t l = 0; l < 6; ++l) scaled.model->prune_ffn(l, removed, {});
  const auto heads_only = pruner::refit_pruned_model(*scaled.model, *dense.model, corpus.train, corpus.pad_id,
                                                     refit_options(pruner::RefitMethod::kHeadScale, kSequences));
  CATCH_CHECK(heads_only.layers.size() == 6);
}

CATCH_TEST_CASE("refit output equals the least-squares solution of the stacked data (QR)", "[refit][minilm]") {
  auto dense = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  auto model = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  pruner::apply_plan(*model.model, pruner::plan_from_remove_heads(testing::kUnevenRemoval, model.model->config()));
  const auto corpus = wikitext(*model.tokenizer, 300);
  const auto batches = batches_of(corpus, kSequences);
  // Layer 0's data, stacked, before the refit (its input does not depend on the refit).
  std::vector<torch::Tensor> zs, ys;
  {
    torch::NoGradGuard no_grad;
    model.model->set_record_attention_io(true);
    dense.model->set_record_attention_io(true);
    for (const auto& in : batches) {
      const auto real = in.attention_mask.reshape({-1}).to(torch::kBool);
      const auto d = dense.model->forward(in, nullptr).attention_io.at(0);
      const auto p = model.model->forward(in, nullptr).attention_io.at(0);
      const auto y = dense.model->output_projection(0)->forward(d.context) + d.residual - p.residual;
      const auto c = p.context.reshape({-1, p.context.size(2)}).index({real}).to(torch::kDouble);
      zs.push_back(torch::cat({c, torch::ones({c.size(0), 1}, c.options())}, 1));
      ys.push_back(y.reshape({-1, y.size(2)}).index({real}).to(torch::kDouble));
    }
    model.model->set_record_attention_io(false);
    dense.model->set_record_attention_io(false);
  }
  const auto z = torch::cat(zs), y = torch::cat(ys);
  const auto [q, r] = torch::linalg_qr(z, "reduced");
  const auto theta =
      torch::linalg_solve_triangular(r, q.t().matmul(y), /*upper=*/true, /*left=*/true, /*unitriangular=*/false);
  const double qr_error = (z.matmul(theta) - y).square().sum().item<double>() / y.square().sum().item<double>();
  const auto result = pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id,
                                                 refit_options(pruner::RefitMethod::kOutput, kSequences));
  const auto measured = measure(*model.model, *dense.model, batches)[0];
  CATCH_CHECK(measured.error <= qr_error + measured.tolerance);
  CATCH_CHECK(qr_error <= measured.error + measured.tolerance);
}

CATCH_TEST_CASE("refit leaves a model with nothing removed as it was", "[refit][minilm]") {
  auto dense = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  auto model = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const auto corpus = wikitext(*model.tokenizer, 200);
  auto o = refit_options(pruner::RefitMethod::kOutput, 24);
  o.ridge = 1e-3;
  const auto before = model.model->output_projection(3)->weight.clone();
  const auto result = pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id, o);
  for (const auto& layer : result.layers) CATCH_CHECK(layer.error_before < 1e-10);
  // The target is met already, so the fit's step is rounding: far below the weights' scale.
  const double change = (model.model->output_projection(3)->weight - before).abs().max().item<double>();
  CATCH_CHECK(change < 1e-4 * before.abs().max().item<double>());
}

CATCH_TEST_CASE("refit on stories260K (GQA, no biases): reported errors are real, and lower", "[refit][llama]") {
  const auto dir = testing::converted_stories();
  auto dense = models::load_checkpoint(dir, torch::kCPU);
  auto model = models::load_checkpoint(dir, torch::kCPU);
  const nlohmann::json remove = {{"0", {0, 1, 2, 3}}, {"2", {1, 5}}, {"4", {0, 2, 4, 6}}};
  pruner::apply_plan(*model.model, pruner::plan_from_remove_heads(remove, model.model->config()));
  pruner::CorpusOptions co;
  co.max_length = 64;
  const auto corpus = pruner::load_corpus({testing::shared_data_dir() / "corpus" / "tinyshakespeare_input.txt"},
                                          *model.tokenizer, co);
  const auto batches = batches_of(corpus, 128);
  const auto result = pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id,
                                                 refit_options(pruner::RefitMethod::kOutput, 128));
  CATCH_CHECK(result.layers[0].parameters == 4 * 8 * 64);  // o_proj [64, 4 heads x 8], no bias
  check_reported_errors(result, measure(*model.model, *dense.model, batches));
}

namespace refit_exactness {

// 16 sequences (about 700 real tokens): enough for the 353 values per output of layer 0's output fit.
constexpr std::size_t kSmall = 16;

/// Layer 0's attention parameter `part` ("self.query", "output.dense", ...) of a MiniLM.
torch::Tensor layer0(models::Checkpoint& ckpt, const std::string& part, const std::string& kind) {
  return ckpt.model->named_parameters()["encoder.layer.0.attention." + part + "." + kind];
}

/// Head `copy` of layer 0 attends and reads values exactly as head `of` does (its query, key
/// and value rows and biases are the same), so both heads' contexts are equal on every token.
void repeat_head(models::Checkpoint& ckpt, int64_t copy, int64_t of) {
  torch::NoGradGuard no_grad;
  const int64_t d = ckpt.model->config().head_dim;
  for (const char* part : {"self.query", "self.key", "self.value"})
    for (const char* kind : {"weight", "bias"}) {
      auto t = layer0(ckpt, part, kind);
      t.narrow(0, copy * d, d).copy_(t.narrow(0, of * d, d).clone());
    }
}

/// The output-projection columns of head `h` of layer 0.
torch::Tensor output_columns(models::Checkpoint& ckpt, int64_t h) {
  const int64_t d = ckpt.model->config().head_dim;
  return layer0(ckpt, "output.dense", "weight").narrow(1, h * d, d);
}

/// Largest |difference| of the last hidden states of two models on `batches`, and the float32
/// bound of the dense one (tests/tolerance.h, the whole network).
std::pair<double, double> final_difference(models::AttentionModel& pruned, models::AttentionModel& dense,
                                           const std::vector<models::ModelInputs>& batches) {
  torch::NoGradGuard no_grad;
  double diff = 0, tol = 0;
  for (const auto& in : batches) {
    const auto real = in.attention_mask.unsqueeze(-1);
    const auto d = dense.forward(in, nullptr).last_hidden_state * real;
    const auto p = pruned.forward(in, nullptr).last_hidden_state * real;
    diff = std::max(diff, (p - d).abs().max().item<double>());
    tol = std::max(tol, testing::float32_tolerance(dense.config(), d));
  }
  return {diff, tol};
}

}  // namespace refit_exactness

// A removed head whose output the kept heads can produce: head 1 of layer 0 repeats head 0's
// attention and values, so its contribution W1·c0 is reachable by the output refit (head 0's
// columns become W0 + W1), and by the scale refit when W1 = 0.5·W0 (head 0 scaled by 1.5).
// With --refit-ridge 0 the refitted model is then the dense one up to float32 rounding.
CATCH_TEST_CASE("refit recovers a reachable dense output to float32 rounding (output and scale)", "[refit][minilm]") {
  using namespace refit_exactness;
  for (auto method : {pruner::RefitMethod::kOutput, pruner::RefitMethod::kHeadScale}) {
    CATCH_INFO("method " << pruner::refit_method_name(method));
    const bool scale = method == pruner::RefitMethod::kHeadScale;
    auto dense = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
    auto model = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
    for (auto* ckpt : {&dense, &model}) {
      repeat_head(*ckpt, 1, 0);
      torch::NoGradGuard no_grad;
      if (scale) output_columns(*ckpt, 1).copy_(0.5 * output_columns(*ckpt, 0));
    }
    const auto head0 = output_columns(model, 0).clone(), head1 = output_columns(model, 1).clone();
    pruner::apply_plan(*model.model, pruner::plan_from_remove_heads({{"0", {1}}}, model.model->config()));
    const auto corpus = wikitext(*model.tokenizer, 120);
    const auto batches = batches_of(corpus, kSmall);
    const auto [before, tol] = final_difference(*model.model, *dense.model, batches);
    CATCH_CHECK(before > 10 * tol);  // removing the head alone is far from the dense model
    const auto result = pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id,
                                                   refit_options(method, kSmall));
    const auto measured = measure(*model.model, *dense.model, batches);
    for (const auto& layer : result.layers) {
      CATCH_INFO("layer " << layer.layer);
      CATCH_CHECK_FALSE(layer.singular);
      CATCH_CHECK(measured[static_cast<std::size_t>(layer.layer)].error <=
                  measured[static_cast<std::size_t>(layer.layer)].tolerance);
    }
    const auto [after, tol_after] = final_difference(*model.model, *dense.model, batches);
    CATCH_CHECK(after <= tol_after);
    // The fit found the construction: head 0's columns (the first after removal) are W0 + W1.
    const auto fitted = output_columns(model, 0);
    CATCH_CHECK((fitted - (head0 + head1)).abs().max().item<double>() <= 1e-3 * head0.abs().max().item<double>());
  }
}

// Head 2 of layer 0 reads zero values (its value rows and biases are 0): its context is zero on
// every token, so with --refit-ridge 0 the normal matrix has a zero block. The refit says so,
// takes the minimum-norm step (head 2's columns, or its scale, stay as they were) and stays
// finite, and still lowers the error.
CATCH_TEST_CASE("refit of a singular system (a kept head that outputs nothing, no ridge) is reported, finite",
                "[refit][minilm]") {
  using namespace refit_exactness;
  for (auto method : {pruner::RefitMethod::kOutput, pruner::RefitMethod::kHeadScale}) {
    CATCH_INFO("method " << pruner::refit_method_name(method));
    auto dense = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
    auto model = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
    const int64_t d = model.model->config().head_dim;
    for (auto* ckpt : {&dense, &model}) {
      torch::NoGradGuard no_grad;
      layer0(*ckpt, "self.value", "weight").narrow(0, 2 * d, d).zero_();
      layer0(*ckpt, "self.value", "bias").narrow(0, 2 * d, d).zero_();
    }
    pruner::apply_plan(*model.model, pruner::plan_from_remove_heads({{"0", {0}}}, model.model->config()));
    const auto zero_head = output_columns(model, 1).clone();  // head 2 is the second kept one
    const auto corpus = wikitext(*model.tokenizer, 120);
    const auto result = pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id,
                                                   refit_options(method, kSmall));
    const auto& layer = result.layers[0];
    CATCH_CHECK(layer.singular);
    // Output: 11 heads x 32 inputs + bias, less head 2's 32; scale: 11 heads less head 2.
    CATCH_CHECK(layer.rank == (method == pruner::RefitMethod::kOutput ? 11 * d + 1 - d : 10));
    CATCH_CHECK(std::isfinite(layer.error_after));
    CATCH_CHECK(layer.error_after < layer.error_before);
    for (const auto& p : model.model->parameters()) CATCH_CHECK(torch::isfinite(p).all().item<bool>());
    CATCH_CHECK(torch::equal(output_columns(model, 1), zero_head));
    for (std::size_t l = 1; l < result.layers.size(); ++l) CATCH_CHECK_FALSE(result.layers[l].singular);
  }
}

CATCH_TEST_CASE("refit refuses too little text and an empty corpus", "[refit][errors]") {
  auto dense = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  auto model = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const auto corpus = wikitext(*model.tokenizer, 40);
  auto o = refit_options(pruner::RefitMethod::kOutput, 3);  // ~3 sentences: fewer tokens than 385 inputs
  CATCH_CHECK_THROWS_WITH(pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id, o),
                          Catch::Matchers::Contains("--refit scale"));
  o.method = pruner::RefitMethod::kHeadScale;  // 12 values per layer: enough
  CATCH_CHECK_NOTHROW(pruner::refit_pruned_model(*model.model, *dense.model, corpus.train, corpus.pad_id, o));
  CATCH_CHECK_THROWS_AS(pruner::refit_pruned_model(*model.model, *dense.model, {}, corpus.pad_id, o), Error);
  CATCH_CHECK_THROWS_AS(pruner::parse_refit_method("lsq", "--refit"), UsageError);
}
