// The LLaMA-style families beyond LLaMA (models/qwen2, qwen3, mistral, phi3, gemma3), and LLaMA with
// Llama 3.2's layout and RoPE scaling (rope_type "llama3"), against transformers
// 5.24's own *ForCausalLM classes: small models transformers made and saved
// (tests/fixtures/<family>, tools/make_decoder_fixtures.py: Qwen2 with q/k/v biases and tied
// embeddings; Qwen3 with q/k norms, head_dim 24 != hidden / heads; Mistral and Phi-3 with a
// sliding window of 8 positions, shorter than the inputs; Phi-3 with fused qkv_proj and
// gate_up_proj; Gemma 3 with (1 + w) sandwich norms, GeGLU, scaled embeddings, query_pre_attn_scalar 20
// and sliding / global layers with two RoPE bases; a byte-level BPE tokenizer with Qwen2's pipeline). Tolerances: the float32
// rounding bound of tests/tolerance.h, from the logits' scale, the depth and the FFN width.
// transformers reloading the exports is tools/check_interop.py's family cases.
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
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

/// What each fixture has that LLaMA has not.
struct Family {
  const char* name;
  int64_t head_dim;
  bool qkv_bias;          ///< Qwen2
  bool qk_norm;           ///< Qwen3
  int64_t window;         ///< Mistral, Phi-3: sliding_window
  bool fused;             ///< Phi-3: qkv_proj / gate_up_proj in the file
  const char* remote_class;
  /// Whether a uniform prune to 2 heads of head_dim (not filling hidden 64) needs the remote
  /// code: transformers 4.x's Qwen2 / Phi-3 take the head size as hidden / heads.
  bool uniform_needs_remote;
  bool llama3_rope;       ///< LLaMA as Llama 3.2: rope_scaling with rope_type "llama3"
};

constexpr std::array<Family, 6> kFamilies = {{
    {"qwen2", 16, true, false, 0, false, "HeadpruneQwen2ForCausalLM", true, false},
    {"qwen3", 24, false, true, 0, false, "HeadpruneQwen3ForCausalLM", false, false},
    {"mistral", 16, false, false, 8, false, "HeadpruneMistralForCausalLM", false, false},
    {"phi3", 16, false, false, 8, true, "HeadprunePhi3ForCausalLM", true, false},
    {"gemma3_text", 24, false, true, 8, false, "HeadpruneGemma3ForCausalLM", false, false},
    {"llama", 16, false, false, 0, false, "HeadpruneLlamaForCausalLM", false, true},
}};

/// The fixture folder of a family (tests/fixtures/<folder>): LLaMA's is Llama 3.2's layout.
std::string folder_of(const std::string& model_type) {
  if (model_type == "gemma3_text") return "gemma3";
  return model_type == "llama" ? "llama3" : model_type;
}

fs::path fixture(const std::string& family) { return testing::fixture_path(folder_of(family)); }

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

CATCH_TEST_CASE("Decoder families: logits match transformers' own classes", "[decoder-families]") {
  for (const auto& family : kFamilies) {
    CATCH_INFO(family.name);
    auto ckpt = models::load_checkpoint(fixture(family.name), torch::kCPU);
    const auto& config = ckpt.model->config();
    CATCH_CHECK(config.model_type == family.name);
    const auto& attn = attention(ckpt, 0);
    CATCH_CHECK(attn->q_proj->bias.defined() == family.qkv_bias);
    CATCH_CHECK_FALSE(attn->o_proj->bias.defined());
    CATCH_CHECK(static_cast<bool>(attn->q_norm) == family.qk_norm);
    CATCH_CHECK(config.head_dim == family.head_dim);
    CATCH_CHECK(config.window_of(2) == family.window);
    const auto& ref = reference(family.name).at("logits");
    const auto tolerance = testing::float32_tolerance(config, ref);
    const auto diff = max_diff(family.name, logits_of(family.name, *ckpt.model), ref);
    CATCH_INFO("max |logits - transformers| = " << diff << ", bound " << tolerance);
    CATCH_CHECK(diff <= tolerance);
    // What differs from LLaMA matters: without it the logits are far off (the check can fail).
    torch::NoGradGuard no_grad;
    if (family.window > 0) {
      auto full = models::load_checkpoint(edited_config(family.name, std::string(family.name) + "-full",
                                                        [](auto& c) { c["sliding_window"] = 1000; }),
                                          torch::kCPU);
      CATCH_CHECK(max_diff(family.name, logits_of(family.name, *full.model), ref) > 100 * tolerance);
    }
    if (family.llama3_rope) {
      auto plain = models::load_checkpoint(edited_config(family.name, "llama3-plain-rope",
                                                         [](auto& c) { c.erase("rope_scaling"); }),
                                           torch::kCPU);
      CATCH_CHECK(max_diff(family.name, logits_of(family.name, *plain.model), ref) > 100 * tolerance);
    }
    if (family.qkv_bias) attn->q_proj->bias.zero_();
    if (family.qk_norm) attn->q_norm->weight.fill_(1.0);
    if (family.qkv_bias || family.qk_norm)
      CATCH_CHECK(max_diff(family.name, logits_of(family.name, *ckpt.model), ref) > 100 * tolerance);
  }
}

CATCH_TEST_CASE("Decoder families: the tokenizer and greedy decoding with the KV cache equal transformers'",
                "[decoder-families]") {
  for (const auto& family : kFamilies) {
    CATCH_INFO(family.name);
    auto ckpt = models::load_checkpoint(fixture(family.name), torch::kCPU);
    CATCH_REQUIRE(ckpt.tokenizer);
    const auto prompt = ids_of(reference(family.name).at("prompt_ids"));
    CATCH_CHECK(ckpt.tokenizer->prompt_ids("The king said") == prompt);
    // 16 new tokens after the prompt: past the sliding window of 8, so the cache's window counts.
    const auto greedy = ids_of(reference(family.name).at("greedy_ids"));
    models::GenerationOptions options;
    options.steps = static_cast<int64_t>(greedy.size() - prompt.size());
    options.temperature = 0;
    CATCH_CHECK(models::generate_tokens(*ckpt.model, prompt, options) == greedy);
    options.use_cache = false;
    CATCH_CHECK(models::generate_tokens(*ckpt.model, prompt, options) == greedy);
  }
}

CATCH_TEST_CASE("Decoder families: removed heads equal zero multipliers, biases and fused rows sliced, and the "
                "export reloads", "[decoder-families]") {
  for (const auto& family : kFamilies) {
    const std::string name = family.name;
    CATCH_INFO(name);
    auto dense = models::load_checkpoint(fixture(name), torch::kCPU);
    const auto& config = dense.model->config();
    // Layer 0 loses query head 1 (KV group 0 keeps head 0); layer 2 loses KV group 0 entirely.
    models::HeadMultipliers multipliers(3);
    multipliers[0] = torch::tensor({1.0F, 0.0F, 1.0F, 1.0F});
    multipliers[2] = torch::tensor({0.0F, 0.0F, 1.0F, 1.0F});
    const auto gated = logits_of(name, *dense.model, &multipliers);

    auto ckpt = models::load_checkpoint(fixture(name), torch::kCPU);
    const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[1],"2":[0,1]})"), config);
    const auto out = testing::temp_dir(name + "-uneven") / "out";
    pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
    CATCH_CHECK(attention(ckpt, 0)->q_proj->weight.size(0) == 3 * config.head_dim);
    if (family.qkv_bias) {
      CATCH_CHECK(attention(ckpt, 0)->q_proj->bias.size(0) == 3 * config.head_dim);
      CATCH_CHECK(attention(ckpt, 2)->k_proj->bias.size(0) == 1 * config.head_dim);
    }
    const auto tolerance = testing::float32_tolerance(config, gated);
    CATCH_CHECK(max_diff(name, logits_of(name, *ckpt.model), gated) <= tolerance);

    const auto written = models::read_json_file(out / "config.json");
    CATCH_CHECK(written["model_type"] == name);
    CATCH_CHECK(written["headprune"]["kept_heads"][2] == nlohmann::json({2, 3}));
    CATCH_CHECK(written["auto_map"]["AutoModelForCausalLM"] == std::string("modeling_headprune_llama.") + family.remote_class);
    CATCH_CHECK(fs::exists(out / "modeling_headprune_llama.py"));
    // Phi-3's file layout survives: layer 0 keeps 3 query heads and both KV heads, layer 2 one of each.
    const auto tensors = models::load_safetensors((out / "model.safetensors").string());
    CATCH_CHECK(tensors.count("model.layers.0.self_attn.qkv_proj.weight") == (family.fused ? 1U : 0U));
    CATCH_CHECK(tensors.count("model.layers.0.self_attn.q_proj.weight") == (family.fused ? 0U : 1U));
    if (family.fused) {
      CATCH_CHECK(tensors.at("model.layers.0.self_attn.qkv_proj.weight").size(0) == (3 + 2 * 2) * config.head_dim);
      CATCH_CHECK(tensors.at("model.layers.2.self_attn.qkv_proj.weight").size(0) == (2 + 2 * 1) * config.head_dim);
      CATCH_CHECK(tensors.at("model.layers.1.mlp.gate_up_proj.weight").size(0) == 2 * config.intermediate_size);
    }
    auto reloaded = models::load_checkpoint(out, torch::kCPU);
    CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{3, 4, 2});
    CATCH_CHECK(max_diff(name, logits_of(name, *reloaded.model), gated) <= tolerance);
  }
}

CATCH_TEST_CASE("Decoder families: a uniform prune is a standard config", "[decoder-families]") {
  for (const auto& family : kFamilies) {
    CATCH_INFO(family.name);
    auto ckpt = models::load_checkpoint(fixture(family.name), torch::kCPU);
    const auto plan = pruner::plan_from_remove_heads(
        nlohmann::json::parse(R"({"0":[0,2],"1":[1,3],"2":[0,3]})"), ckpt.model->config());
    const auto out = testing::temp_dir(std::string(family.name) + "-uniform") / "out";
    pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
    const auto written = models::read_json_file(out / "config.json");
    CATCH_CHECK(written["num_attention_heads"] == 2);
    CATCH_CHECK(written["num_key_value_heads"] == 2);
    CATCH_CHECK(written["head_dim"] == ckpt.model->config().head_dim);
    // 2 heads of 16 do not fill hidden 64, which transformers 4.x's Qwen2 / Phi-3 need, so the
    // remote code goes with them; transformers 5 (and Qwen3, Mistral everywhere) read head_dim.
    CATCH_CHECK(written.contains("auto_map") == family.uniform_needs_remote);
    CATCH_CHECK(models::load_checkpoint(out, torch::kCPU).model->config().heads_per_layer() ==
                std::vector<int64_t>{2, 2, 2});
  }
}

CATCH_TEST_CASE("Decoder families: dropping a layer keeps the others' windows", "[decoder-families]") {
  auto ckpt = models::load_checkpoint(fixture("mistral"), torch::kCPU);
  const auto before = logits_of("mistral", *ckpt.model);
  ckpt.model->drop_layers({1});
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.num_hidden_layers == 2);
  CATCH_CHECK(config.sliding_layers == std::vector<bool>{true, true});
  CATCH_CHECK(config.window_of(1) == 8);
  CATCH_CHECK(max_diff("mistral", logits_of("mistral", *ckpt.model), before) > 0);
  // Gemma 3's export names each layer's type: sliding_window_pattern would shift after a drop.
  auto gemma = models::load_checkpoint(fixture("gemma3_text"), torch::kCPU);
  gemma.model->drop_layers({0});
  CATCH_CHECK(gemma.model->config().sliding_layers == std::vector<bool>{false, true});
  CATCH_CHECK(gemma.model->config().to_json()["layer_types"] == nlohmann::json({"full_attention", "sliding_attention"}));
}

namespace {

/// Loading `dir` fails with a message containing `message`.
void check_refused(const fs::path& dir, const std::string& message) {
  CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, torch::kCPU), Catch::Contains(message));
}

/// A copy of Phi-3's fixture whose layer-1 qkv_proj lost its last row.
fs::path phi3_with_short_qkv() {
  const auto dir = testing::temp_dir("phi3-short-qkv");
  fs::copy_file(fixture("phi3") / "config.json", dir / "config.json");
  auto tensors = models::load_safetensors((fixture("phi3") / "model.safetensors").string());
  auto& qkv = tensors.at("model.layers.1.self_attn.qkv_proj.weight");
  qkv = qkv.narrow(0, 0, qkv.size(0) - 1).contiguous();
  models::save_safetensors(dir / "model.safetensors", tensors);
  return dir;
}

}  // namespace

CATCH_TEST_CASE("Decoder families: what headprune does not implement is refused by name", "[decoder-families]") {
  const auto refused = [](const std::string& family, const std::string& tag,
                          const std::function<void(nlohmann::json&)>& edit, const std::string& message) {
    CATCH_INFO(family << ": " << tag);
    check_refused(edited_config(family, family + "-" + tag, edit), message);
  };
  for (const auto& family : kFamilies) {
    const std::string name = family.name;
    if (name != "llama")  // LLaMA models mlp_bias (LlamaConfig has it): the file then lacks the biases
      refused(name, "mlp-bias", [](auto& c) { c["mlp_bias"] = true; }, "key 'mlp_bias' is not modelled");
    refused(name, "yarn", [](auto& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; },
            "rope_scaling");
    const std::string act_key = name == "gemma3_text" ? "hidden_activation" : "hidden_act";  // Gemma3TextConfig's name
    refused(name, "gelu", [&](auto& c) { c[act_key] = "gelu"; }, act_key + " 'gelu' is not supported");
  }
  refused("gemma3_text", "hidden-act", [](auto& c) { c["hidden_act"] = "silu"; }, "hidden_act \"silu\" differs from hidden_activation");
  refused("gemma3_text", "softcap", [](auto& c) { c["final_logit_softcapping"] = 30.0; }, "final_logit_softcapping 30.0 is not supported");
  refused("gemma3_text", "window-null", [](auto& c) { c["sliding_window"] = nullptr; }, "sliding_window null is not supported");
  refused("gemma3_text", "layer-type", [](auto& c) { c["layer_types"][0] = "chunked_attention"; }, "layer_types[0] is \"chunked_attention\"");
  refused("gemma3_text", "rope-scaling", [](auto& c) { c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}}; },
          "rope_scaling");
  for (const std::string name : {"qwen2", "qwen3"}) {
    refused(name, "sliding", [](auto& c) { c["use_sliding_window"] = true; }, "use_sliding_window true is not supported");
    refused(name, "layer-types", [](auto& c) { c["layer_types"][1] = "sliding_attention"; },
            "layer_types has \"sliding_attention\"");
  }
  for (const std::string name : {"mistral", "phi3"}) {
    refused(name, "window-0", [](auto& c) { c["sliding_window"] = 0; }, "sliding_window must be a positive number");
    refused(name, "layer-types", [](auto& c) { c["layer_types"] = {"full_attention", "sliding_attention", "full_attention"}; },
            "key 'layer_types' is not modelled");
  }
  // Llama 3's RoPE scaling: each key read or refused, and its values checked.
  refused("llama", "llama3-no-factor", [](auto& c) { c["rope_scaling"].erase("factor"); },
          "rope_scaling: required key 'factor' is missing");
  refused("llama", "llama3-unknown", [](auto& c) { c["rope_scaling"]["beta_fast"] = 32; },
          "rope_scaling.beta_fast is not supported");
  refused("llama", "llama3-factor", [](auto& c) { c["rope_scaling"]["factor"] = 0.5; }, "needs factor >= 1");
  refused("llama", "llama3-bands", [](auto& c) { c["rope_scaling"]["high_freq_factor"] = 1.0; },
          "high_freq_factor > low_freq_factor");
  // LLaMA's attention_bias (all four projections) is not a Qwen2 key; Qwen3 has it.
  refused("qwen2", "attention-bias", [](auto& c) { c["attention_bias"] = true; }, "key 'attention_bias' is not modelled");
  refused("phi3", "partial-rotary", [](auto& c) { c["partial_rotary_factor"] = 0.75; },
          "partial_rotary_factor 0.75 is not supported");
  refused("phi3", "longrope",
          [](auto& c) { c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}}; },
          "rope_scaling");
  check_refused(phi3_with_short_qkv(), "tensor 'model.layers.1.self_attn.qkv_proj.weight' has shape [127, 64]");
  // Qwen3's head_dim defaults to 128 (HF Qwen3Config), not hidden / heads; Mistral's window to 4096.
  const auto qwen3 = edited_config("qwen3", "qwen3-no-head-dim", [](auto& c) { c.erase("head_dim"); });
  CATCH_CHECK(models::read_config(models::read_json_file(qwen3 / "config.json"), "c").head_dim == 128);
  const auto mistral = edited_config("mistral", "mistral-no-window", [](auto& c) { c.erase("sliding_window"); });
  CATCH_CHECK(models::read_config(models::read_json_file(mistral / "config.json"), "c").sliding_window == 4096);
}

CATCH_TEST_CASE("Decoder families: GGUF export writes what llama.cpp's llama runs and refuses the rest by name",
                "[decoder-families]") {
  auto gemma = models::load_checkpoint(fixture("gemma3_text"), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(models::check_gguf_exportable(gemma),
                          Catch::Contains("layer 1 is full attention; llama.cpp's gemma3 makes every 6th layer global"));
  auto llama3 = models::load_checkpoint(fixture("llama"), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(models::check_gguf_exportable(llama3), Catch::Contains("rope_type \"llama3\"") &&
                                                                   Catch::Contains("rope_freqs"));
  auto phi3 = models::load_checkpoint(fixture("phi3"), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(models::check_gguf_exportable(phi3),
                          Catch::Contains("sliding window of 8 positions") && Catch::Contains("llama.cpp's phi3"));
  // Mistral is written as `llama`, as llama.cpp's converter does, unless its window would matter.
  auto windowed = models::load_checkpoint(fixture("mistral"), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(models::check_gguf_exportable(windowed), Catch::Contains("sliding window of 8 positions"));
  auto full = models::load_checkpoint(
      edited_config("mistral", "mistral-gguf-full", [](auto& c) { c["sliding_window"] = nullptr; }), torch::kCPU);
  CATCH_CHECK_NOTHROW(models::check_gguf_exportable(full));
  // ... and the file computes what the folder does (read back as `llama`, Q/K permuted and back).
  const auto file = testing::temp_dir("mistral-gguf") / "mistral.gguf";
  models::export_gguf(full, file, false, models::GgufExportType::kF32);
  auto reloaded = models::load_checkpoint(file, torch::kCPU);
  CATCH_CHECK(reloaded.model->config().model_type == "llama");
  const auto expected = logits_of("mistral", *full.model);
  CATCH_CHECK(max_diff("mistral", logits_of("mistral", *reloaded.model), expected) <=
              testing::float32_tolerance(full.model->config(), expected));
}

CATCH_TEST_CASE("Decoder families: Gemma 3 exports as llama.cpp's gemma3 and reads back with the same logits",
                "[decoder-families]") {
  // The fixture as llama.cpp's gemma3 graph computes it: every 6th layer global (here none of
  // 3), the attention scale 1/sqrt(head_dim).
  const auto dir = edited_config("gemma3_text", "gemma3-gguf", [](auto& c) {
    c["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention"};
    c["query_pre_attn_scalar"] = 24;
  });
  auto dense = models::load_checkpoint(dir, torch::kCPU);
  auto pruned = models::load_checkpoint(dir, torch::kCPU);
  for (int64_t l = 0; l < 3; ++l) pruned.model->prune_heads(l, {1}, {});  // 3 of 4 query heads, KV groups 1 and 2
  for (auto* ckpt : {&dense, &pruned}) {
    const auto file = testing::temp_dir("gemma3-gguf-out") / "gemma3.gguf";
    const auto written = models::export_gguf(*ckpt, file, true, models::GgufExportType::kF32);
    CATCH_CHECK(written.architecture == "gemma3");
    const auto f = models::read_gguf(file);
    CATCH_CHECK(f.header.find("gemma3.attention.sliding_window")->value == 8);
    CATCH_CHECK(f.header.find("gemma3.attention.head_count")->value == ckpt->model->config().kept_heads[0].size());
    auto reloaded = models::load_checkpoint(file, torch::kCPU);  // norms 1 + w there, w here
    const auto expected = logits_of("gemma3_text", *ckpt->model);
    CATCH_CHECK(max_diff("gemma3_text", logits_of("gemma3_text", *reloaded.model), expected) <=
                testing::float32_tolerance(ckpt->model->config(), expected));
  }
  auto uneven = models::load_checkpoint(dir, torch::kCPU);
  uneven.model->prune_heads(0, {1}, {});
  CATCH_CHECK_THROWS_WITH(models::build_gguf(uneven, models::GgufExportType::kF32),
                          Catch::Contains("llama.cpp's gemma3 architecture cannot hold"));
}

CATCH_TEST_CASE("Decoder families: Qwen2, Qwen3 and Phi-3 export as llama.cpp's own architectures (llama where "
                "pruning leaves its shapes) and read back with the same logits",
                "[decoder-families]") {
  struct Case {
    std::string family;
    std::string dense_arch, uniform_arch;  ///< written architecture: all heads / 3 of 4 in each layer
  };
  for (const auto& [family, dense_arch, uniform_arch] :
       {Case{"qwen2", "qwen2", "llama"}, Case{"qwen3", "qwen3", "qwen3"}, Case{"phi3", "phi3", "llama"}}) {
    CATCH_INFO(family);
    // Phi-3's window of 8 is refused (llama.cpp attends to every position): the fixture without it.
    const auto dir = edited_config(family, family + "-gguf", [](auto& c) { c["sliding_window"] = nullptr; });
    auto dense = models::load_checkpoint(dir, torch::kCPU);
    auto uniform = models::load_checkpoint(dir, torch::kCPU);
    for (int64_t l = 0; l < 3; ++l) uniform.model->prune_heads(l, {1}, {});  // KV groups then used unevenly
    for (auto [ckpt, arch] : {std::pair{&dense, dense_arch}, std::pair{&uniform, uniform_arch}}) {
      const auto file = testing::temp_dir(family + "-gguf-out") / "model.gguf";
      const auto written = models::export_gguf(*ckpt, file, true, models::GgufExportType::kF32);
      CATCH_CHECK(written.architecture == arch);
      auto reloaded = models::load_checkpoint(file, torch::kCPU);
      CATCH_CHECK(reloaded.model->config().model_type == (arch == "llama" && family == "phi3" ? "llama" : family));
      const auto expected = logits_of(family, *ckpt->model);
      CATCH_CHECK(max_diff(family, logits_of(family, *reloaded.model), expected) <=
                  testing::float32_tolerance(ckpt->model->config(), expected));
    }
    auto uneven = models::load_checkpoint(dir, torch::kCPU);
    uneven.model->prune_heads(0, {1}, {});
    if (family == "qwen3") {
      CATCH_CHECK_THROWS_WITH(models::build_gguf(uneven, models::GgufExportType::kF32),
                              Catch::Contains("llama.cpp's qwen3 architecture cannot hold"));
    } else {
      CATCH_CHECK(models::build_gguf(uneven, models::GgufExportType::kF32).architecture == "deci");
    }
  }
}
