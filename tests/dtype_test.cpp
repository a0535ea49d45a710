// `--dtype bfloat16`: the real models run in bfloat16 and stay close to float32.
//
// Tolerance. bfloat16 keeps 8 significant bits: unit roundoff u = 2^-9 for one rounding. A
// transformer layer rounds the residual stream's contributions about ten times (q, k, v, the
// attention probabilities, the output projection, two norms, the FFN's two products and its
// activation); independent roundings add in quadrature, so after L layers the relative error of a
// hidden vector is about δ = u·√(10·L) (MiniLM: 0.015; stories260K: 0.014). Allowing 6× that,
// δ = 0.1, the cosine to the float32 vector is at least 1 − δ²/2 = 0.995. A float32 run gives 1
// exactly, which the tests rule out by also requiring the outputs to differ.
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/inputs.h"
#include "models/loader.h"
#include "models/tokenizer/wordpiece.h"
#include "tests/cli_support.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"

using namespace headprune;

namespace {

constexpr double kMinCosine = 0.995;

/// The smallest cosine between matching rows of `a` and `b` ([N, D], compared in float32).
double min_row_cosine(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::cosine_similarity(a.to(torch::kFloat), b.to(torch::kFloat), 1).min().item<double>();
}

const std::vector<std::string> kSentences = {
    "The cat sat on the mat.", "A man is playing a guitar on the street corner tonight.",
    "Stock markets fell sharply after the announcement.", "hi", "Where is the nearest station?"};

}  // namespace

CATCH_TEST_CASE("all-MiniLM-L6-v2 in bfloat16: padded-batch embeddings within bfloat16 rounding of float32",
                "[dtype][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const auto& wordpiece = dynamic_cast<const models::WordPieceTokenizer&>(*ckpt.tokenizer);
  const auto in = models::to_model_inputs(wordpiece.encode_batch(kSentences, 128), torch::kCPU);
  CATCH_REQUIRE(in.attention_mask.min().item<int64_t>() == 0);  // the batch really is padded
  torch::NoGradGuard no_grad;
  const auto f32 = ckpt.pooling.embed(ckpt.model->forward(in, nullptr).last_hidden_state, in.attention_mask);
  models::cast_checkpoint(ckpt, torch::kBFloat16);
  for (const auto& p : ckpt.model->parameters()) CATCH_CHECK(p.scalar_type() == torch::kBFloat16);
  for (const auto& b : ckpt.model->buffers())
    CATCH_CHECK((b.is_floating_point() ? b.scalar_type() == torch::kBFloat16 : b.scalar_type() == torch::kLong));
  const auto hidden = ckpt.model->forward(in, nullptr).last_hidden_state;
  CATCH_CHECK(hidden.scalar_type() == torch::kBFloat16);
  CATCH_CHECK(torch::isfinite(hidden).all().item<bool>());  // padded rows too (mask_min)
  const auto bf16 = ckpt.pooling.embed(hidden, in.attention_mask);
  CATCH_CHECK(bf16.scalar_type() == torch::kFloat);
  CATCH_CHECK(min_row_cosine(bf16, f32) >= kMinCosine);
  CATCH_CHECK((bf16 - f32).abs().max().item<double>() > 0);
}

CATCH_TEST_CASE("stories260K in bfloat16: logits of a padded batch within bfloat16 rounding of float32",
                "[dtype][llama]") {
  auto ckpt = models::load_checkpoint(testing::stories_dir() / "stories260K.bin", torch::kCPU);
  auto ids = torch::randint(3, 512, {2, 24}, torch::kLong);
  auto mask = torch::ones({2, 24}, torch::kLong);
  mask.index_put_({1, torch::indexing::Slice(0, 5)}, 0);  // left padding: rows that see nothing
  torch::NoGradGuard no_grad;
  const auto f32 = ckpt.model->forward({ids, mask, {}}, nullptr).logits;
  models::cast_checkpoint(ckpt, torch::kBFloat16);
  const auto bf16 = ckpt.model->forward({ids, mask, {}}, nullptr).logits;
  CATCH_CHECK(bf16.scalar_type() == torch::kBFloat16);
  CATCH_CHECK(torch::isfinite(bf16).all().item<bool>());
  const auto real = mask.view({-1}).nonzero().squeeze(1);
  CATCH_CHECK(min_row_cosine(bf16.view({48, -1}).index_select(0, real), f32.view({48, -1}).index_select(0, real)) >=
              kMinCosine);
  CATCH_CHECK((bf16.to(torch::kFloat) - f32).abs().max().item<double>() > 0);
}

CATCH_TEST_CASE("the dtype option on the command line: bfloat16 runs, an unknown type is a usage error", "[dtype][cli]") {
  testing::Workspace w("dtype-cli");
  const auto out = (w.dir / "emb.safetensors").string();
  CATCH_CHECK(testing::run_cli({"embed", w.model.string(), "--data", w.corpus.string(), "--embeddings", out,
                                "--dtype", "bfloat16"}) == 0);
  CATCH_CHECK(models::load_safetensors(out).at("embeddings").scalar_type() == torch::kFloat);
  CATCH_CHECK(testing::run_cli({"embed", w.model.string(), "--data", w.corpus.string(), "--embeddings", out,
                                "--dtype", "fp8"}) == 2);
  CATCH_CHECK(testing::run_cli({"bench", w.model.string(), w.model.string(), "--batch-size", "1", "--seq-len", "8",
                                "--min-reps", "1", "--max-reps", "1", "--dtype", "bf16"}) == 0);
}
