// The real SmolLM2-135M-Instruct from its llama.cpp GGUF file (Q4_1; scripts/fetch-model
// SmolLM2-135M-Instruct) against transformers 5.24's own GGUF loading:
// tests/fixtures/smollm2/reference_logits.safetensors from tools/make_smollm2_logits.py.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/formats/safetensors.h"
#include "models/generation.h"
#include "models/loader.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace {

/// The GGUF file; fails the test if it is absent.
std::filesystem::path smollm2_gguf() {
  auto file = testing::env_or("HEADPRUNE_SMOLLM2_GGUF",
                              testing::source_dir() / ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
  if (!std::filesystem::exists(file))
    CATCH_FAIL("SmolLM2 GGUF not found at " << file
               << ": run scripts/fetch-model SmolLM2-135M-Instruct or set HEADPRUNE_SMOLLM2_GGUF");
  return file;
}

models::TensorMap reference() {
  return models::load_safetensors(testing::fixture_path("smollm2/reference_logits.safetensors"));
}

std::vector<int64_t> as_ids(const torch::Tensor& t) { return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()}; }

}  // namespace

CATCH_TEST_CASE("SmolLM2 from GGUF: logits of 20 prompts match transformers' GGUF loading", "[smollm2]") {
  auto ckpt = models::load_checkpoint(smollm2_gguf(), testing::test_device());
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.num_hidden_layers == 30);
  CATCH_CHECK(config.num_attention_heads == 9);
  CATCH_CHECK(config.num_key_value_heads == 3);
  CATCH_CHECK(config.tie_word_embeddings);
  const auto ref = reference();
  const auto lengths = ref.at("lengths");
  CATCH_REQUIRE(lengths.size(0) == 20);
  torch::NoGradGuard no_grad;
  for (int64_t row = 0; row < lengths.size(0); ++row) {
    const auto n = lengths[row].item<int64_t>();
    const auto ids = ref.at("input_ids")[row].slice(0, 0, n);
    const auto logits = ckpt.model->forward({ids.unsqueeze(0).to(testing::test_device()), {}, {}}, nullptr).logits[0].cpu();
    const auto top_ids = ref.at("top_ids")[row].slice(0, 0, n);
    const auto top_logits = ref.at("top_logits")[row].slice(0, 0, n);
    const auto ours_top = logits.gather(1, top_ids);
    // 1e-4 of the logits' scale, as the issue asks; float32_tolerance (30 layers × FFN 1536)
    // is looser, so the tighter bound is the claim.
    const double scale = logits.abs().max().item<double>();
    const double tol = 1e-4 * scale;
    const double top_diff = (ours_top - top_logits).abs().max().item<double>();
    const double lse_diff = (logits.logsumexp(-1) - ref.at("logsumexp")[row].slice(0, 0, n)).abs().max().item<double>();
    CATCH_INFO("prompt " << row << ": scale " << scale << ", top-16 max |diff| " << top_diff
               << ", logsumexp max |diff| " << lse_diff);
    CATCH_CHECK(top_diff <= tol);
    CATCH_CHECK(lse_diff <= tol);
    CATCH_CHECK(torch::equal(logits.argmax(-1), top_ids.select(1, 0)));
  }
}

CATCH_TEST_CASE("SmolLM2 from GGUF: greedy ChatML answer equals transformers' generate", "[smollm2]") {
  auto ckpt = models::load_checkpoint(smollm2_gguf(), torch::kCPU);
  const auto ref = reference();
  const auto prompt = as_ids(ref.at("chat_prompt_ids"));
  const auto expected = as_ids(ref.at("chat_answer_ids"));
  models::GenerationOptions options;
  options.steps = static_cast<int64_t>(expected.size());
  options.temperature = 0;
  auto ids = models::generate_tokens(*ckpt.model, prompt, options);
  ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prompt.size()));
  CATCH_CHECK(ids == expected);
}
