// A Llama-3.2-1B-shaped model (issue 37: 16 layers, hidden 2048, 32 query / 8 KV heads, vocabulary
// 128,256, tied embeddings, bfloat16 weights, Llama 3's RoPE scaling) against transformers' own
// LlamaForCausalLM on it: made by tools/make_llama32_1b_shaped.py (2.5 GB, not committed), so the
// test is hidden ([.]) and runs where HEADPRUNE_LLAMA32_1B names such a folder with its
// reference.safetensors (the tool's --reference / --reference-of), on HEADPRUNE_TEST_DEVICE:
//   HEADPRUNE_LLAMA32_1B=DIR build/headprune_tests "[llama32-1b]"
// DIR may also be headprune's export of a prune of it, with the reference written for the export.
// Tolerance: tests/tolerance.h's float32 bound from the logits' scale, 16 layers and the FFN
// width 8192 (both sides compute in float32 from the same bfloat16 values).
#include <cmath>
#include <cstdlib>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

CATCH_TEST_CASE("Llama-3.2-1B-shaped model: logits match transformers' LlamaForCausalLM", "[.][llama32-1b]") {
  const char* dir = std::getenv("HEADPRUNE_LLAMA32_1B");
  if (!dir) {
    CATCH_WARN("HEADPRUNE_LLAMA32_1B is not set (tools/make_llama32_1b_shaped.py makes the folder): nothing checked");
    return;
  }
  const auto device = testing::test_device();
  const auto ckpt = models::load_checkpoint(dir, device);
  const auto& c = ckpt.model->config();
  CATCH_CHECK(c.rope_scaling.llama3);
  CATCH_CHECK(c.vocab_size == 128256);
  const auto ref = models::load_safetensors((std::filesystem::path(dir) / "reference.safetensors").string());
  torch::NoGradGuard no_grad;
  const auto logits = ckpt.model
                          ->forward({ref.at("input_ids").to(device), ref.at("attention_mask").to(device), {}}, nullptr)
                          .logits.cpu();
  const auto& expected = ref.at("logits");
  const auto real = ref.at("attention_mask").to(torch::kBool).unsqueeze(-1);
  const double diff = (logits - expected).abs().masked_fill(~real, 0).max().item<double>();
  const double tolerance = testing::float32_tolerance(c, expected);
  CATCH_INFO("heads per layer " << c.heads_per_layer()[0] << ", max |logits - transformers| " << diff << ", bound "
                                << tolerance << ", logit scale " << expected.abs().max().item<double>());
  CATCH_CHECK(diff <= tolerance);
  CATCH_CHECK(std::isfinite(diff));
}
