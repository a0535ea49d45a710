// The Qwen2 family (models/qwen2/) against transformers 5.24's own Qwen2ForCausalLM: a small
// model transformers made and saved (tests/fixtures/qwen2, tools/make_qwen2_fixture.py: biases on
// q/k/v, tied embeddings, rope_theta 1e6, a byte-level BPE tokenizer with Qwen2's pipeline).
// Tolerances: the float32 rounding bound of tests/tolerance.h, from the logits' scale, the depth
// and the FFN width. transformers reloading the exports is tools/check_interop.py's "qwen2" case.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/generation.h"
#include "models/gguf_model.h"
#include "models/llama/llama_model.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

fs::path qwen2_dir() { return testing::fixture_path("qwen2"); }

const models::TensorMap& reference() {
  static const auto ref = models::load_safetensors((qwen2_dir() / "reference.safetensors").string());
  return ref;
}

std::vector<int64_t> ids_of(const torch::Tensor& t) {
  const auto c = t.to(torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

/// The model's logits on the reference batch.
torch::Tensor logits_of(models::AttentionModel& model, const models::HeadMultipliers* multipliers = nullptr) {
  torch::NoGradGuard no_grad;
  return model.forward({reference().at("input_ids"), reference().at("attention_mask"), {}}, multipliers).logits;
}

/// max |a - b| over the real (unpadded) tokens.
double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const auto real = reference().at("attention_mask").to(torch::kBool).unsqueeze(-1);
  return (a - b).abs().masked_fill(~real, 0).max().item<double>();
}

/// A copy of the fixture's config.json with `edit` applied, in a new folder beside its weights.
fs::path edited_config(const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
  const auto dir = testing::temp_dir(tag);
  auto config = models::read_json_file(qwen2_dir() / "config.json");
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  fs::copy_file(qwen2_dir() / "model.safetensors", dir / "model.safetensors");
  return dir;
}

}  // namespace

CATCH_TEST_CASE("Qwen2: logits match transformers' Qwen2ForCausalLM (q/k/v biases, tied embeddings)", "[qwen2]") {
  auto ckpt = models::load_checkpoint(qwen2_dir(), torch::kCPU);
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.model_type == "qwen2");
  CATCH_CHECK(config.qkv_bias);
  CATCH_CHECK_FALSE(config.attention_bias);
  const auto& llama = dynamic_cast<const models::LlamaModel&>(*ckpt.model);
  CATCH_CHECK(llama.layers[0]->self_attn->q_proj->bias.defined());
  CATCH_CHECK_FALSE(llama.layers[0]->self_attn->o_proj->bias.defined());
  const auto& ref = reference().at("logits");
  const auto diff = max_diff(logits_of(*ckpt.model), ref);
  CATCH_INFO("max |logits - transformers| = " << diff << ", bound " << testing::float32_tolerance(config, ref));
  CATCH_CHECK(diff <= testing::float32_tolerance(config, ref));
  // The biases matter: without them the logits are far off (the check above can fail).
  auto unbiased = models::load_checkpoint(qwen2_dir(), torch::kCPU);
  auto& layer0 = dynamic_cast<models::LlamaModel&>(*unbiased.model).layers[0]->self_attn;
  torch::NoGradGuard no_grad;
  layer0->q_proj->bias.zero_();
  CATCH_CHECK(max_diff(logits_of(*unbiased.model), ref) > 100 * testing::float32_tolerance(config, ref));
}

CATCH_TEST_CASE("Qwen2: the tokenizer and greedy decoding with the KV cache equal transformers'", "[qwen2]") {
  auto ckpt = models::load_checkpoint(qwen2_dir(), torch::kCPU);
  CATCH_REQUIRE(ckpt.tokenizer);
  const auto prompt = ids_of(reference().at("prompt_ids"));
  CATCH_CHECK(ckpt.tokenizer->prompt_ids("The king said") == prompt);
  const auto greedy = ids_of(reference().at("greedy_ids"));
  models::GenerationOptions options;
  options.steps = static_cast<int64_t>(greedy.size() - prompt.size());
  options.temperature = 0;
  CATCH_CHECK(models::generate_tokens(*ckpt.model, prompt, options) == greedy);
  options.use_cache = false;
  CATCH_CHECK(models::generate_tokens(*ckpt.model, prompt, options) == greedy);
}

CATCH_TEST_CASE("Qwen2: removed heads equal zero multipliers, biases sliced with them, and the export reloads",
                "[qwen2]") {
  auto dense = models::load_checkpoint(qwen2_dir(), torch::kCPU);
  const auto& config = dense.model->config();
  // Layer 0 loses query head 1 (KV group 0 keeps head 0); layer 2 loses KV group 0 entirely.
  models::HeadMultipliers multipliers(3);
  multipliers[0] = torch::tensor({1.0F, 0.0F, 1.0F, 1.0F});
  multipliers[2] = torch::tensor({0.0F, 0.0F, 1.0F, 1.0F});
  const auto gated = logits_of(*dense.model, &multipliers);

  auto ckpt = models::load_checkpoint(qwen2_dir(), torch::kCPU);
  const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[1],"2":[0,1]})"), config);
  const auto out = testing::temp_dir("qwen2-uneven") / "out";
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto& layers = dynamic_cast<const models::LlamaModel&>(*ckpt.model).layers;
  CATCH_CHECK(layers[0]->self_attn->q_proj->bias.size(0) == 3 * config.head_dim);
  CATCH_CHECK(layers[2]->self_attn->k_proj->bias.size(0) == 1 * config.head_dim);
  const auto tolerance = testing::float32_tolerance(config, gated);
  CATCH_CHECK(max_diff(logits_of(*ckpt.model), gated) <= tolerance);

  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["model_type"] == "qwen2");
  CATCH_CHECK(written["headprune"]["kept_heads"][2] == nlohmann::json({2, 3}));
  CATCH_CHECK(written["auto_map"]["AutoModelForCausalLM"] == "modeling_headprune_llama.HeadpruneQwen2ForCausalLM");
  CATCH_CHECK(fs::exists(out / "modeling_headprune_llama.py"));
  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{3, 4, 2});
  CATCH_CHECK(max_diff(logits_of(*reloaded.model), gated) <= tolerance);
}

CATCH_TEST_CASE("Qwen2: a uniform prune is a standard Qwen2 config", "[qwen2]") {
  auto ckpt = models::load_checkpoint(qwen2_dir(), torch::kCPU);
  const auto plan = pruner::plan_from_remove_heads(
      nlohmann::json::parse(R"({"0":[0,2],"1":[1,3],"2":[0,3]})"), ckpt.model->config());
  const auto out = testing::temp_dir("qwen2-uniform") / "out";
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["num_attention_heads"] == 2);
  CATCH_CHECK(written["num_key_value_heads"] == 2);
  CATCH_CHECK(written["head_dim"] == 16);
  // 2 heads of 16 do not fill hidden 64: transformers 4.x's Qwen2 cannot build it, so the
  // remote code goes with it (transformers 5 loads it natively: tools/check_interop.py).
  CATCH_CHECK(written["auto_map"]["AutoConfig"] == "modeling_headprune_llama.HeadpruneQwen2Config");
  CATCH_CHECK(models::load_checkpoint(out, torch::kCPU).model->config().heads_per_layer() ==
              std::vector<int64_t>{2, 2, 2});
}

CATCH_TEST_CASE("Qwen2: what headprune does not implement is refused by name", "[qwen2]") {
  const auto refused = [](const std::string& tag, const std::function<void(nlohmann::json&)>& edit,
                          const std::string& message) {
    const auto dir = edited_config(tag, edit);
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, torch::kCPU), Catch::Contains(message));
  };
  refused("qwen2-sliding", [](auto& c) { c["use_sliding_window"] = true; }, "use_sliding_window true is not supported");
  refused("qwen2-layer-types", [](auto& c) { c["layer_types"][1] = "sliding_attention"; },
          "layer_types has \"sliding_attention\"");
  refused("qwen2-attention-bias", [](auto& c) { c["attention_bias"] = true; }, "key 'attention_bias' is not modelled");
  refused("qwen2-yarn", [](auto& c) { c["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; },
          "rope_parameters");
  refused("qwen2-gelu", [](auto& c) { c["hidden_act"] = "gelu"; }, "hidden_act 'gelu' is not supported for qwen2");
  auto ckpt = models::load_checkpoint(qwen2_dir(), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(models::check_gguf_exportable(ckpt), Catch::Contains("'qwen2' model, which has no llama.cpp GGUF mapping"));
}
