// The model-family registry: model_type -> family, unknown types refused with the supported
// list, and each family's answers that the rest of headprune relies on.
#include <catch2/catch.hpp>

#include <set>

#include "models/attention_model.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/flops.h"
#include "models/head_costs.h"
#include "models/model_family.h"
#include "models/registry.h"
#include "tests/tiny_model.h"

namespace hp = headprune;

namespace {

nlohmann::json llama_json() {
  return {{"model_type", "llama"}, {"vocab_size", 32},          {"hidden_size", 16},
          {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
          {"intermediate_size", 24}};
}

}  // namespace

CATCH_TEST_CASE("the registry lists every family and maps each to its own", "[registry]") {
  CATCH_CHECK(hp::models::supported_model_types() == std::vector<std::string>{"bert", "distilbert", "mpnet", "roberta", "xlm-roberta", "modernbert", "llama", "qwen2", "qwen3", "mistral", "phi3", "gemma3_text"});
  for (const auto& type : hp::models::supported_model_types())
    CATCH_CHECK(hp::models::family_of(type).model_type() == type);
}

CATCH_TEST_CASE("an unknown model_type is refused with the supported list", "[registry]") {
  CATCH_CHECK_THROWS_WITH(hp::models::family_of("gpt2"),
                          "model_type 'gpt2' is not supported (supported: bert, distilbert, mpnet, roberta, xlm-roberta, modernbert, llama, qwen2, qwen3, mistral, phi3, gemma3_text)");
  auto j = llama_json();
  j["model_type"] = "gpt2";
  CATCH_CHECK_THROWS_WITH(hp::models::read_config(j, "cfg.json"),
                          "cfg.json: model_type 'gpt2' is not supported (supported: bert, distilbert, mpnet, roberta, xlm-roberta, modernbert, llama, qwen2, qwen3, mistral, phi3, gemma3_text)");
}

CATCH_TEST_CASE("a family's keys are refused in another family's config", "[registry]") {
  auto bert = hp::testing::tiny_config().raw;
  bert["rms_norm_eps"] = 1e-6;  // a LLaMA key
  CATCH_CHECK_THROWS_WITH(hp::models::read_config(bert, "b"),
                          Catch::Contains("key 'rms_norm_eps' is not modelled by headprune for model_type 'bert'"));
  auto llama = llama_json();
  llama["type_vocab_size"] = 2;  // a BERT key
  CATCH_CHECK_THROWS_WITH(hp::models::read_config(llama, "l"),
                          Catch::Contains("key 'type_vocab_size' is not modelled by headprune for model_type 'llama'"));
}

CATCH_TEST_CASE("the registry builds each family's model with the config's heads", "[registry]") {
  const auto bert = hp::testing::tiny_config(2, 4);
  auto bert_model = hp::models::make_model(bert, {"pooler.dense.weight"});
  CATCH_CHECK(bert_model->config().model_type == "bert");
  CATCH_CHECK(bert_model->named_parameters().contains("pooler.dense.weight"));
  CATCH_CHECK_FALSE(hp::models::make_model(bert, {})->named_parameters().contains("pooler.dense.weight"));
  const auto llama = hp::models::read_config(llama_json(), "l");
  auto llama_model = hp::models::make_model(llama, {});
  CATCH_CHECK(llama_model->config().heads_per_layer() == std::vector<int64_t>{4, 4});
  CATCH_CHECK(llama_model->named_parameters().contains("model.layers.0.self_attn.k_proj.weight"));
}

CATCH_TEST_CASE("per-head costs follow each family's layout", "[registry]") {
  // BERT: Q/K/V/O with biases, one KV head per query head, two FFN matrices, no LM head.
  const auto bert = hp::testing::tiny_config(2, 4, 8);  // H = 32, d = 8, I = 64
  CATCH_CHECK(hp::models::attention_parameters(bert) == 2 * (4 * 32 * 32 + 4 * 32));
  CATCH_CHECK(hp::models::forward_flops_per_token(bert, 1) -
                  hp::models::attention_flops_per_token(bert, 1) == 2 * 4.0 * 32 * 64);
  // LLaMA: no biases by default, 2 KV heads for 4 query heads, SwiGLU (3 matrices), LM head.
  const auto llama = hp::models::read_config(llama_json(), "l");  // H 16, d 4, I 24, V 32
  CATCH_CHECK(hp::models::attention_parameters(llama) == 2 * (4 * 2 * 16 * 4 + 2 * 2 * 16 * 4));
  CATCH_CHECK(hp::models::forward_flops_per_token(llama, 1) -
                  hp::models::attention_flops_per_token(llama, 1) == 2 * 6.0 * 16 * 24 + 2.0 * 16 * 32);
  CATCH_CHECK_FALSE(bert.family().has_lm_head());
  // DistilBERT: BERT's layout under its own config names (no token types: not per head).
  const auto distilbert = hp::models::read_config(
      {{"model_type", "distilbert"}, {"vocab_size", 32}, {"dim", 32}, {"n_layers", 2}, {"n_heads", 4},
       {"hidden_dim", 64}},
      "d");
  CATCH_CHECK(hp::models::attention_parameters(distilbert) == hp::models::attention_parameters(bert));
  CATCH_CHECK(hp::models::forward_flops_per_token(distilbert, 1) == hp::models::forward_flops_per_token(bert, 1));
  CATCH_CHECK(llama.family().has_lm_head());
  // Qwen2: LLaMA's layout plus q/k/v biases (d per query head, 2d per KV head), no o_proj bias.
  auto qwen2_json = llama_json();
  qwen2_json["model_type"] = "qwen2";
  const auto qwen2 = hp::models::read_config(qwen2_json, "q");
  CATCH_CHECK(hp::models::attention_parameters(qwen2) ==
              hp::models::attention_parameters(llama) + 2 * (4 * 4 + 2 * 2 * 4));
  // Qwen3: LLaMA's projections (head_dim 128 by default); its q/k norms are per layer, not per head.
  auto qwen3_json = llama_json();
  qwen3_json["model_type"] = "qwen3";
  const auto qwen3 = hp::models::read_config(qwen3_json, "q3");
  CATCH_CHECK(qwen3.head_dim == 128);
  CATCH_CHECK(hp::models::attention_parameters(qwen3) == 2 * (4 * 2 * 16 * 128 + 2 * 2 * 16 * 128));
}
