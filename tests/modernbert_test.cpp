// ModernBERT (models/modernbert) against transformers 5.24's own ModernBertModel: a small model
// transformers made and saved (tools/make_encoder_fixtures.py modernbert: 3 layers, width 64, 4
// heads, GeGLU, layer 1 local with a window of 8 either side, RoPE bases 160,000 / 10,000, no
// biases, on a 152-token input and a padded one; weights at scales where every part matters) with
// ModernBERT's byte-level BPE tokenizer pipeline. Tolerances: the float32 rounding bound of
// tests/tolerance.h. transformers reloading pruned exports is tools/check_interop.py's "modernbert"
// case.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <string>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/formats/safetensors.h"
#include "models/llama/llama_model.h"
#include "models/loader.h"
#include "models/model_family.h"
#include "pruner/jobs/layer_baseline.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

// Helpers in one named namespace: the tests build in unity batches (CMakeLists.txt).
namespace modernbert_test {

fs::path fixture() { return testing::fixture_path("modernbert"); }

const models::TensorMap& reference() {
  static const auto tensors = models::load_safetensors((fixture() / "reference.safetensors").string());
  return tensors;
}

/// The model's last_hidden_state on the reference batch.
torch::Tensor hidden_of(models::AttentionModel& model, const models::HeadMultipliers* multipliers = nullptr) {
  torch::NoGradGuard no_grad;
  return model.forward({reference().at("input_ids"), reference().at("attention_mask"), {}}, multipliers)
      .last_hidden_state;
}

/// max |a - b| over the real (unpadded) tokens of the reference batch.
double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const auto real = reference().at("attention_mask").to(torch::kBool).unsqueeze(-1);
  return (a - b).abs().masked_fill(~real, 0).max().item<double>();
}

/// A copy of the fixture with `edit` applied to its config.json.
fs::path edited_config(const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
  const auto dir = testing::temp_dir(tag);
  auto config = models::read_json_file(fixture() / "config.json");
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  fs::copy_file(fixture() / "model.safetensors", dir / "model.safetensors");
  return dir;
}

CATCH_TEST_CASE("ModernBERT: config, last_hidden_state and BPE ids equal transformers' ModernBertModel",
                "[modernbert]") {
  auto ckpt = models::load_checkpoint(fixture(), torch::kCPU);
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.model_type == "modernbert");
  CATCH_CHECK(config.hidden_act == "gelu");  // hidden_activation
  CATCH_CHECK(config.sliding_layers == std::vector<bool>{false, true, false});
  CATCH_CHECK(config.window_of(1) == 16);
  CATCH_CHECK(config.rope_theta_of(0) == 160000.0);
  CATCH_CHECK(config.rope_theta_of(1) == 10000.0);
  CATCH_CHECK(ckpt.unused_keys.empty());
  const auto& llama = dynamic_cast<const models::LlamaModel&>(*ckpt.model);
  CATCH_CHECK_FALSE(llama.layers[0]->input_layernorm);  // attn_norm is nn.Identity in layer 0
  CATCH_CHECK(llama.layers[1]->input_layernorm);
  CATCH_CHECK_FALSE(llama.lm_head);

  const auto& ref = reference().at("last_hidden_state");
  CATCH_CHECK(ref.size(1) > 8 * 16);  // far beyond the local window
  const auto tolerance = testing::float32_tolerance(config, ref);
  const auto diff = max_diff(hidden_of(*ckpt.model), ref);
  CATCH_INFO("max |hidden - transformers| = " << diff << ", bound " << tolerance);
  CATCH_CHECK(diff <= tolerance);
  CATCH_CHECK(ckpt.model->forward({reference().at("input_ids"), {}, {}}, nullptr).logits.defined() == false);

  // The byte-level BPE tokenizer with [CLS] $A [SEP] and [MASK] taking the space before it.
  const auto encodings = models::read_json_file(fixture() / "encodings.json");
  CATCH_REQUIRE(encodings.at("cases").size() > 60);
  for (const auto& c : encodings.at("cases")) {
    CATCH_INFO(c.at("text").get<std::string>());
    CATCH_CHECK(ckpt.tokenizer->encode(c.at("text").get<std::string>(), 512) == c.at("ids").get<std::vector<int64_t>>());
  }

  // The local window and its RoPE base matter (the checks can fail): a window covering the whole
  // input, or the global base in the local layer, moves the states.
  for (const auto& [tag, edit] : std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>>{
           {"modernbert-window", [](auto& c) { c["local_attention"] = 1024; }},
           {"modernbert-base", [](auto& c) { c["rope_parameters"]["sliding_attention"]["rope_theta"] = 160000.0; }}}) {
    auto changed = models::load_checkpoint(edited_config(tag, edit), torch::kCPU);
    CATCH_INFO(tag);
    CATCH_CHECK(max_diff(hidden_of(*changed.model), ref) > 100 * tolerance);
  }
}

CATCH_TEST_CASE("ModernBERT: removed heads equal zero multipliers, and the export fuses Wqkv with the kept heads",
                "[modernbert]") {
  auto dense = models::load_checkpoint(fixture(), torch::kCPU);
  const auto& config = dense.model->config();
  models::HeadMultipliers multipliers(3);
  multipliers[0] = torch::tensor({1.0F, 0.0F, 1.0F, 1.0F});
  multipliers[1] = torch::tensor({0.0F, 0.0F, 0.0F, 0.0F});
  multipliers[2] = torch::tensor({0.0F, 1.0F, 0.0F, 1.0F});
  const auto gated = hidden_of(*dense.model, &multipliers);

  auto ckpt = models::load_checkpoint(fixture(), torch::kCPU);
  const auto plan =
      pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[1],"1":[0,1,2,3],"2":[0,2]})"), config);
  const auto out = testing::temp_dir("modernbert-uneven") / "out";
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto tolerance = testing::float32_tolerance(config, gated);
  CATCH_CHECK(max_diff(hidden_of(*ckpt.model), gated) <= tolerance);

  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["model_type"] == "modernbert");
  CATCH_CHECK(written["num_attention_heads"] == 4);
  CATCH_CHECK(written["head_dim"] == 16);
  CATCH_CHECK(written["headprune"]["kept_heads"] == nlohmann::json::parse("[[0,2,3],[],[1,3]]"));
  CATCH_CHECK(written["layer_types"] == nlohmann::json::parse(R"(["full_attention","sliding_attention","full_attention"])"));
  CATCH_CHECK_FALSE(written.contains("global_attn_every_n_layers"));
  CATCH_CHECK(written["auto_map"]["AutoModel"] == "modeling_headprune_modernbert.HeadpruneModernBertModel");
  CATCH_CHECK(fs::exists(out / "modeling_headprune_modernbert.py"));
  CATCH_CHECK(fs::exists(out / "modeling_headprune_bert.py"));  // imported by the ModernBERT file
  const auto tensors = models::load_safetensors((out / "model.safetensors").string());
  CATCH_CHECK(tensors.at("layers.0.attn.Wqkv.weight").sizes() == torch::IntArrayRef{3 * 3 * 16, 64});
  CATCH_CHECK(tensors.at("layers.1.attn.Wqkv.weight").size(0) == 0);
  CATCH_CHECK(tensors.at("layers.2.attn.Wo.weight").sizes() == torch::IntArrayRef{64, 2 * 16});
  CATCH_CHECK(tensors.at("layers.2.mlp.Wi.weight").size(0) == 2 * config.intermediate_size);
  CATCH_CHECK(tensors.count("embeddings.norm.weight") == 1);
  CATCH_CHECK(tensors.count("final_norm.weight") == 1);
  CATCH_CHECK(tensors.count("layers.0.attn_norm.weight") == 0);
  CATCH_CHECK(tensors.count("model.layers.0.self_attn.q_proj.weight") == 0);
  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{3, 0, 2});
  CATCH_CHECK(max_diff(hidden_of(*reloaded.model), gated) <= tolerance);

  // Layer 0 is built without its attention norm: removing it would strip layer 1's. The greedy
  // layer baseline passes over it.
  CATCH_CHECK_THROWS_WITH(reloaded.model->drop_layers({0}), Catch::Contains("layer 0 of a 'modernbert' model"));
  std::vector<std::vector<int64_t>> sequences;
  const auto& ids = reference().at("input_ids");
  const auto& mask = reference().at("attention_mask");
  for (int64_t row = 0; row < ids.size(0); ++row) {
    const auto real = ids[row].masked_select(mask[row].to(torch::kBool));
    sequences.emplace_back(real.data_ptr<int64_t>(), real.data_ptr<int64_t>() + real.numel());
  }
  const auto order = pruner::greedy_layer_order(models::load_checkpoint(fixture(), torch::kCPU), sequences, 2, torch::kCPU, 2);
  CATCH_CHECK((order.at(0).layer != 0 && order.at(1).layer != 0));
  reloaded.model->drop_layers({1});
  const auto dropped = reloaded.model->config().family().to_json(reloaded.model->config());
  CATCH_CHECK(dropped["layer_types"] == nlohmann::json::parse(R"(["full_attention","full_attention"])"));
}

CATCH_TEST_CASE("ModernBERT: what it does not model is refused with one line naming it", "[modernbert]") {
  const auto refused = [](const fs::path& dir, const std::string& what) {
    CATCH_INFO(what);
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, torch::kCPU), Catch::Contains(what));
  };
  refused(edited_config("mb-bias", [](auto& c) { c["attention_bias"] = true; }), "attention_bias true is not supported");
  refused(edited_config("mb-rope", [](auto& c) { c["rope_parameters"]["full_attention"]["rope_type"] = "yarn"; }),
          "rope_parameters.full_attention");
  refused(edited_config("mb-types", [](auto& c) { c["global_attn_every_n_layers"] = 3; }),
          "layer_types and global_attn_every_n_layers 3 name different local layers");
  refused(edited_config("mb-pool", [](auto& c) { c["classifier_pooling"] = "max"; }),
          "classifier_pooling 'max' is not supported");
  refused(edited_config("mb-act", [](auto& c) { c["hidden_activation"] = "relu"; }),
          "hidden_activation 'relu' is not supported");
  refused(edited_config("mb-window", [](auto& c) { c["local_attention"] = 0; }), "local_attention must be at least 2");
  refused(edited_config("mb-key", [](auto& c) { c["mystery"] = 1; }),
          "key 'mystery' is not modelled by headprune for model_type 'modernbert'");
  refused(edited_config("mb-both", [](auto& c) { c["hidden_act"] = "gelu"; }), "both 'hidden_act' and 'hidden_activation'");
}

}  // namespace modernbert_test
