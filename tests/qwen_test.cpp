// The Qwen2 and Qwen3 families (models/qwen2/, models/qwen3/) against transformers 5.24's own
// Qwen2ForCausalLM / Qwen3ForCausalLM: small models transformers made and saved
// (tests/fixtures/qwen2 and qwen3, tools/make_qwen_fixtures.py: Qwen2 with q/k/v biases and tied
// embeddings; Qwen3 with q/k norms, head_dim 24 != hidden / heads, untied; rope_theta 1e6; a
// byte-level BPE tokenizer with Qwen2's pipeline). Tolerances: the float32 rounding bound of
// tests/tolerance.h, from the logits' scale, the depth and the FFN width. transformers reloading
// the exports is tools/check_interop.py's "qwen2" / "qwen3" cases.
#include <catch2/catch.hpp>

#include <array>
#include <fstream>
#include <functional>
#include <map>
#include <string>

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

constexpr std::array<const char*, 2> kFamilies = {"qwen2", "qwen3"};

fs::path fixture(const std::string& family) { return testing::fixture_path(family); }

const models::TensorMap& reference(const std::string& family) {
  static std::map<std::string, models::TensorMap> cache;
  auto it = cache.find(family);
  if (it == cache.end())
    it = cache.emplace(family, models::load_safetensors((fixture(family) / "reference.safetensors").string())).first;
  return it->second;
}

std::vector<int64_t> ids_of(const torch::Tensor& t) {
  const auto c = t.to(torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

/// The model's logits on the family's reference batch.
torch::Tensor logits_of(const std::string& family, models::AttentionModel& model,
                        const models::HeadMultipliers* multipliers = nullptr) {
  torch::NoGradGuard no_grad;
  const auto& ref = reference(family);
  return model.forward({ref.at("input_ids"), ref.at("attention_mask"), {}}, multipliers).logits;
}

/// max |a - b| over the real (unpadded) tokens of the family's reference batch.
double max_diff(const std::string& family, const torch::Tensor& a, const torch::Tensor& b) {
  const auto real = reference(family).at("attention_mask").to(torch::kBool).unsqueeze(-1);
  return (a - b).abs().masked_fill(~real, 0).max().item<double>();
}

/// A copy of the family's config.json with `edit` applied, in a new folder beside its weights.
fs::path edited_config(const std::string& family, const std::string& tag,
                       const std::function<void(nlohmann::json&)>& edit) {
  const auto dir = testing::temp_dir(tag);
  auto config = models::read_json_file(fixture(family) / "config.json");
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  fs::copy_file(fixture(family) / "model.safetensors", dir / "model.safetensors");
  return dir;
}

const models::LlamaAttention& attention(const models::Checkpoint& ckpt, int64_t layer) {
  return dynamic_cast<const models::LlamaModel&>(*ckpt.model).layers.at(layer)->self_attn;
}

}  // namespace

CATCH_TEST_CASE("Qwen2 / Qwen3: logits match transformers' own classes", "[qwen]") {
  for (const std::string family : kFamilies) {
    CATCH_INFO(family);
    auto ckpt = models::load_checkpoint(fixture(family), torch::kCPU);
    const auto& config = ckpt.model->config();
    CATCH_CHECK(config.model_type == family);
    const auto& attn = attention(ckpt, 0);
    // Qwen2: q/k/v biases, none on o_proj. Qwen3: q/k norms, no biases, head_dim 24 of hidden 64.
    CATCH_CHECK(attn->q_proj->bias.defined() == (family == "qwen2"));
    CATCH_CHECK_FALSE(attn->o_proj->bias.defined());
    CATCH_CHECK(static_cast<bool>(attn->q_norm) == (family == "qwen3"));
    CATCH_CHECK(config.head_dim == (family == "qwen2" ? 16 : 24));
    const auto& ref = reference(family).at("logits");
    const auto diff = max_diff(family, logits_of(family, *ckpt.model), ref);
    CATCH_INFO("max |logits - transformers| = " << diff << ", bound " << testing::float32_tolerance(config, ref));
    CATCH_CHECK(diff <= testing::float32_tolerance(config, ref));
    // What differs from LLaMA matters: without it the logits are far off (the check can fail).
    torch::NoGradGuard no_grad;
    if (family == "qwen2") attn->q_proj->bias.zero_();
    else attn->q_norm->weight.fill_(1.0);
    CATCH_CHECK(max_diff(family, logits_of(family, *ckpt.model), ref) > 100 * testing::float32_tolerance(config, ref));
  }
}

CATCH_TEST_CASE("Qwen2 / Qwen3: the tokenizer and greedy decoding with the KV cache equal transformers'", "[qwen]") {
  for (const std::string family : kFamilies) {
    CATCH_INFO(family);
    auto ckpt = models::load_checkpoint(fixture(family), torch::kCPU);
    CATCH_REQUIRE(ckpt.tokenizer);
    const auto prompt = ids_of(reference(family).at("prompt_ids"));
    CATCH_CHECK(ckpt.tokenizer->prompt_ids("The king said") == prompt);
    const auto greedy = ids_of(reference(family).at("greedy_ids"));
    models::GenerationOptions options;
    options.steps = static_cast<int64_t>(greedy.size() - prompt.size());
    options.temperature = 0;
    CATCH_CHECK(models::generate_tokens(*ckpt.model, prompt, options) == greedy);
    options.use_cache = false;
    CATCH_CHECK(models::generate_tokens(*ckpt.model, prompt, options) == greedy);
  }
}

CATCH_TEST_CASE("Qwen2 / Qwen3: removed heads equal zero multipliers, biases sliced, and the export reloads",
                "[qwen]") {
  for (const std::string family : kFamilies) {
    CATCH_INFO(family);
    auto dense = models::load_checkpoint(fixture(family), torch::kCPU);
    const auto& config = dense.model->config();
    // Layer 0 loses query head 1 (KV group 0 keeps head 0); layer 2 loses KV group 0 entirely.
    models::HeadMultipliers multipliers(3);
    multipliers[0] = torch::tensor({1.0F, 0.0F, 1.0F, 1.0F});
    multipliers[2] = torch::tensor({0.0F, 0.0F, 1.0F, 1.0F});
    const auto gated = logits_of(family, *dense.model, &multipliers);

    auto ckpt = models::load_checkpoint(fixture(family), torch::kCPU);
    const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[1],"2":[0,1]})"), config);
    const auto out = testing::temp_dir(family + "-uneven") / "out";
    pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
    CATCH_CHECK(attention(ckpt, 0)->q_proj->weight.size(0) == 3 * config.head_dim);
    if (family == "qwen2") {
      CATCH_CHECK(attention(ckpt, 0)->q_proj->bias.size(0) == 3 * config.head_dim);
      CATCH_CHECK(attention(ckpt, 2)->k_proj->bias.size(0) == 1 * config.head_dim);
    }
    const auto tolerance = testing::float32_tolerance(config, gated);
    CATCH_CHECK(max_diff(family, logits_of(family, *ckpt.model), gated) <= tolerance);

    const auto written = models::read_json_file(out / "config.json");
    CATCH_CHECK(written["model_type"] == family);
    CATCH_CHECK(written["headprune"]["kept_heads"][2] == nlohmann::json({2, 3}));
    const auto remote_class = family == "qwen2" ? "HeadpruneQwen2ForCausalLM" : "HeadpruneQwen3ForCausalLM";
    CATCH_CHECK(written["auto_map"]["AutoModelForCausalLM"] == std::string("modeling_headprune_llama.") + remote_class);
    CATCH_CHECK(fs::exists(out / "modeling_headprune_llama.py"));
    auto reloaded = models::load_checkpoint(out, torch::kCPU);
    CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{3, 4, 2});
    CATCH_CHECK(max_diff(family, logits_of(family, *reloaded.model), gated) <= tolerance);
  }
}

CATCH_TEST_CASE("Qwen2 / Qwen3: a uniform prune is a standard config", "[qwen]") {
  for (const std::string family : kFamilies) {
    CATCH_INFO(family);
    auto ckpt = models::load_checkpoint(fixture(family), torch::kCPU);
    const auto plan = pruner::plan_from_remove_heads(
        nlohmann::json::parse(R"({"0":[0,2],"1":[1,3],"2":[0,3]})"), ckpt.model->config());
    const auto out = testing::temp_dir(family + "-uniform") / "out";
    pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
    const auto written = models::read_json_file(out / "config.json");
    CATCH_CHECK(written["num_attention_heads"] == 2);
    CATCH_CHECK(written["num_key_value_heads"] == 2);
    CATCH_CHECK(written["head_dim"] == ckpt.model->config().head_dim);
    // Qwen2: 2 heads of 16 do not fill hidden 64, which transformers 4.x's Qwen2 needs, so the
    // remote code goes with it; transformers 5 (and Qwen3 everywhere) reads head_dim: none.
    CATCH_CHECK(written.contains("auto_map") == (family == "qwen2"));
    CATCH_CHECK(models::load_checkpoint(out, torch::kCPU).model->config().heads_per_layer() ==
                std::vector<int64_t>{2, 2, 2});
  }
}

CATCH_TEST_CASE("Qwen2 / Qwen3: what headprune does not implement is refused by name", "[qwen]") {
  const auto refused = [](const std::string& family, const std::string& tag,
                          const std::function<void(nlohmann::json&)>& edit, const std::string& message) {
    CATCH_INFO(family << ": " << tag);
    const auto dir = edited_config(family, family + "-" + tag, edit);
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, torch::kCPU), Catch::Contains(message));
  };
  for (const std::string family : kFamilies) {
    refused(family, "sliding", [](auto& c) { c["use_sliding_window"] = true; }, "use_sliding_window true is not supported");
    refused(family, "layer-types", [](auto& c) { c["layer_types"][1] = "sliding_attention"; },
            "layer_types has \"sliding_attention\"");
    refused(family, "mlp-bias", [](auto& c) { c["mlp_bias"] = true; }, "key 'mlp_bias' is not modelled");
    refused(family, "yarn", [](auto& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; },
            "rope_scaling");
    refused(family, "gelu", [](auto& c) { c["hidden_act"] = "gelu"; },
            "hidden_act 'gelu' is not supported for " + family);
    auto ckpt = models::load_checkpoint(fixture(family), torch::kCPU);
    CATCH_CHECK_THROWS_WITH(models::check_gguf_exportable(ckpt),
                            Catch::Contains("'" + family + "' model, which has no llama.cpp GGUF mapping"));
  }
  // LLaMA's attention_bias (all four projections) is not a Qwen2 key; Qwen3 has it.
  refused("qwen2", "attention-bias", [](auto& c) { c["attention_bias"] = true; }, "key 'attention_bias' is not modelled");
  // Qwen3's head_dim defaults to 128 (HF Qwen3Config), not hidden / heads.
  const auto dir = edited_config("qwen3", "qwen3-no-head-dim", [](auto& c) { c.erase("head_dim"); });
  CATCH_CHECK(models::ModelConfig::from_json(models::read_json_file(dir / "config.json"), "c").head_dim == 128);
}
