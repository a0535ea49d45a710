// The BERT-style encoder families beyond BERT (models/distilbert, models/mpnet, models/roberta) against
// transformers 5.24's own classes: small models transformers made and saved
// (tools/make_encoder_fixtures.py: tests/fixtures/distilbert, a DistilBertModel with its WordPiece
// vocabulary in tokenizer.json only; tests/fixtures/mpnet, an MPNetModel whose relative position
// bias moves the scores, on ~100-token inputs, one padded; tests/fixtures/roberta, a RobertaModel
// with its byte-level BPE tokenizer, on 141-token inputs, one padded; 3 layers, width 64, 4 heads, weights at
// scales where every part matters) and the real all-mpnet-base-v2 tokenizer
// (tests/fixtures/mpnet_tokenizer). Tolerances: the float32 rounding bound of tests/tolerance.h,
// from the hidden states' scale, the depth and the FFN width. transformers and
// sentence-transformers reloading pruned exports is tools/check_interop.py's "distilbert" and
// "mpnet" cases.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <functional>
#include <string>

#include <torch/torch.h>

#include "models/bert/bert_model.h"
#include "models/checkpoint.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "models/model_family.h"
#include "models/tokenizer/wordpiece.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

// Helpers and cases in one named namespace: the tests build in unity batches (CMakeLists.txt).
namespace encoder_families_test {

fs::path fixture(const std::string& family = "distilbert") { return testing::fixture_path(family); }

const models::TensorMap& reference(const std::string& family = "distilbert") {
  static std::map<std::string, models::TensorMap> cache;
  auto it = cache.find(family);
  if (it == cache.end())
    it = cache.emplace(family, models::load_safetensors((fixture(family) / "reference.safetensors").string())).first;
  return it->second;
}

/// The model's last_hidden_state on the family's reference batch.
torch::Tensor hidden_of(models::AttentionModel& model, const models::HeadMultipliers* multipliers = nullptr,
                        const std::string& family = "distilbert") {
  torch::NoGradGuard no_grad;
  const auto& ref = reference(family);
  return model.forward({ref.at("input_ids"), ref.at("attention_mask"), {}}, multipliers).last_hidden_state;
}

/// max |a - b| over the real (unpadded) tokens of the family's reference batch.
double max_diff(const torch::Tensor& a, const torch::Tensor& b, const std::string& family = "distilbert") {
  const auto real = reference(family).at("attention_mask").to(torch::kBool).unsqueeze(-1);
  return (a - b).abs().masked_fill(~real, 0).max().item<double>();
}

/// A copy of the family's fixture with `edit` applied to its config.json.
fs::path edited_config(const std::string& tag, const std::function<void(nlohmann::json&)>& edit,
                       const std::string& family = "distilbert") {
  const auto dir = testing::temp_dir(tag);
  auto config = models::read_json_file(fixture(family) / "config.json");
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  fs::copy_file(fixture(family) / "model.safetensors", dir / "model.safetensors");
  return dir;
}

/// Checks the tokenizer of `ckpt` gives the reference ids of the fixture's texts.json.
void check_reference_ids(const models::Checkpoint& ckpt, const std::string& family) {
  CATCH_REQUIRE(ckpt.tokenizer);
  const auto texts = models::read_json_file(fixture(family) / "texts.json");
  const auto& ids = reference(family).at("input_ids");
  const auto& mask = reference(family).at("attention_mask");
  for (int64_t row = 0; row < ids.size(0); ++row) {
    const auto expected = ids[row].masked_select(mask[row].to(torch::kBool));
    const auto got = ckpt.tokenizer->encode(texts.at(row).get<std::string>(), 512);
    CATCH_CHECK(torch::equal(torch::tensor(got, torch::kLong), expected.to(torch::kLong)));
  }
}

const models::BertModel& bert(const models::Checkpoint& ckpt) {
  return dynamic_cast<const models::BertModel&>(*ckpt.model);
}


CATCH_TEST_CASE("DistilBERT: config names, last_hidden_state and tokenizer equal transformers' DistilBertModel",
                "[encoder-families]") {
  auto ckpt = models::load_checkpoint(fixture(), torch::kCPU);
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.model_type == "distilbert");
  // dim, n_heads, n_layers, hidden_dim, activation read as BERT's names.
  CATCH_CHECK(config.hidden_size == 64);
  CATCH_CHECK(config.num_attention_heads == 4);
  CATCH_CHECK(config.num_hidden_layers == 3);
  CATCH_CHECK(config.intermediate_size == 128);
  CATCH_CHECK(config.hidden_act == "gelu");
  CATCH_CHECK_FALSE(bert(ckpt).embeddings->token_type_embeddings);
  CATCH_CHECK(ckpt.unused_keys.empty());

  const auto& ref = reference().at("last_hidden_state");
  const auto tolerance = testing::float32_tolerance(config, ref);
  const auto diff = max_diff(hidden_of(*ckpt.model), ref);
  CATCH_INFO("max |hidden - transformers| = " << diff << ", bound " << tolerance);
  CATCH_CHECK(diff <= tolerance);
  // The biases matter (the check can fail): without one the states are far off.
  torch::NoGradGuard no_grad;
  bert(ckpt).layers[1]->attention->output->dense->bias.zero_();
  CATCH_CHECK(max_diff(hidden_of(*ckpt.model), ref) > 100 * tolerance);

  check_reference_ids(ckpt, "distilbert");
}

CATCH_TEST_CASE("DistilBERT: removed heads equal zero multipliers, and the export keeps DistilBERT's names",
                "[encoder-families]") {
  auto dense = models::load_checkpoint(fixture(), torch::kCPU);
  const auto& config = dense.model->config();
  models::HeadMultipliers multipliers(3);
  multipliers[0] = torch::tensor({1.0F, 0.0F, 1.0F, 1.0F});
  multipliers[2] = torch::tensor({0.0F, 0.0F, 1.0F, 0.0F});
  const auto gated = hidden_of(*dense.model, &multipliers);

  auto ckpt = models::load_checkpoint(fixture(), torch::kCPU);
  const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[1],"2":[0,1,3]})"), config);
  const auto out = testing::temp_dir("distilbert-uneven") / "out";
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto tolerance = testing::float32_tolerance(config, gated);
  CATCH_CHECK(max_diff(hidden_of(*ckpt.model), gated) <= tolerance);

  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["model_type"] == "distilbert");
  CATCH_CHECK(written["n_heads"] == 4);
  CATCH_CHECK_FALSE(written.contains("num_attention_heads"));
  CATCH_CHECK(written["pruned_heads"] == nlohmann::json::parse(R"({"0":[1],"2":[0,1,3]})"));
  CATCH_CHECK(written["auto_map"]["AutoModel"] == "modeling_headprune_distilbert.HeadpruneDistilBertModel");
  CATCH_CHECK(fs::exists(out / "modeling_headprune_distilbert.py"));
  const auto tensors = models::load_safetensors((out / "model.safetensors").string());
  CATCH_CHECK(tensors.at("transformer.layer.0.attention.q_lin.weight").size(0) == 3 * 16);
  CATCH_CHECK(tensors.at("transformer.layer.2.attention.out_lin.weight").size(1) == 1 * 16);
  CATCH_CHECK(tensors.at("transformer.layer.2.attention.v_lin.bias").size(0) == 1 * 16);
  CATCH_CHECK(tensors.count("transformer.layer.1.sa_layer_norm.weight") == 1);
  CATCH_CHECK(tensors.count("encoder.layer.0.attention.self.query.weight") == 0);
  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{3, 4, 1});
  CATCH_CHECK(max_diff(hidden_of(*reloaded.model), gated) <= tolerance);

  // Dropping a layer rewrites DistilBERT's own key for the depth.
  reloaded.model->drop_layers({1});
  const auto dropped = reloaded.model->config().family().to_json(reloaded.model->config());
  CATCH_CHECK(dropped["n_layers"] == 2);
  CATCH_CHECK_FALSE(dropped.contains("num_hidden_layers"));
}

CATCH_TEST_CASE("DistilBERT: what it does not model is refused with one line naming it", "[encoder-families]") {
  const auto refused = [](const fs::path& dir, const std::string& what) {
    CATCH_INFO(what);
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, torch::kCPU), Catch::Contains(what));
  };
  refused(edited_config("distilbert-both", [](auto& c) { c["hidden_size"] = 64; }),
          "both 'hidden_size' and 'dim' are set");
  refused(edited_config("distilbert-act", [](auto& c) { c["activation"] = "silu"; }), "activation 'silu'");
  refused(edited_config("distilbert-key", [](auto& c) { c["output_past"] = true; c["mystery"] = 1; }),
          "key 'mystery' is not modelled");

  // DistilBertFor* files (the encoder under "distilbert."): a classifier without its
  // pre_classifier, and a task head other than sequence classification.
  const auto task = edited_config("distilbert-task",
                                  [](auto& c) { c["architectures"] = {"DistilBertForSequenceClassification"}; });
  auto weights = models::load_safetensors((fixture() / "model.safetensors").string());
  models::TensorMap prefixed;
  for (const auto& [key, t] : weights) prefixed["distilbert." + key] = t;
  prefixed["classifier.weight"] = torch::zeros({2, 64});
  prefixed["classifier.bias"] = torch::zeros({2});
  models::save_safetensors(task / "model.safetensors", prefixed);
  refused(task, "weight 'pre_classifier.weight' (shape [64, 64]) is missing");
  prefixed.erase("classifier.weight");
  prefixed.erase("classifier.bias");
  prefixed["qa_outputs.weight"] = torch::zeros({2, 64});
  models::save_safetensors(task / "model.safetensors", prefixed);
  refused(task, "the encoder's tensors are under 'distilbert.' as in a DistilBertForSequenceClassification, "
                "but there is no classifier.weight");

  // A layer tensor of no DistilBERT module.
  const auto odd = edited_config("distilbert-odd", [](auto&) {});
  weights["transformer.layer.1.attention.rotary.weight"] = torch::zeros({4});
  models::save_safetensors(odd / "model.safetensors", weights);
  refused(odd, "'transformer.layer.1.attention.rotary.weight' is not part of a DistilBERT layer");
}

CATCH_TEST_CASE("MPNet: last_hidden_state equals transformers' MPNetModel, relative bias and padded positions included",
                "[encoder-families]") {
  auto ckpt = models::load_checkpoint(fixture("mpnet"), torch::kCPU);
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.model_type == "mpnet");
  CATCH_CHECK(config.position_padding_idx == 1);
  CATCH_CHECK(ckpt.unused_keys.empty());
  const auto& model = bert(ckpt);
  CATCH_REQUIRE(model.relative_attention_bias);
  CATCH_CHECK(model.relative_attention_bias->weight.sizes() == torch::IntArrayRef({32, 4}));
  const auto& ref = reference("mpnet").at("last_hidden_state");
  CATCH_CHECK(ref.size(1) > 64);  // distances in the log-spaced buckets
  const auto tolerance = testing::float32_tolerance(config, ref);
  const auto diff = max_diff(hidden_of(*ckpt.model, nullptr, "mpnet"), ref, "mpnet");
  CATCH_INFO("max |hidden - transformers| = " << diff << ", bound " << tolerance);
  CATCH_CHECK(diff <= tolerance);
  check_reference_ids(ckpt, "mpnet");
  // The relative bias matters (the check can fail): without it the states are far off.
  torch::NoGradGuard no_grad;
  model.relative_attention_bias->weight.zero_();
  CATCH_CHECK(max_diff(hidden_of(*ckpt.model, nullptr, "mpnet"), ref, "mpnet") > 100 * tolerance);
}

CATCH_TEST_CASE("MPNet: removed heads take their bias columns along, and the export keeps MPNet's names",
                "[encoder-families]") {
  auto dense = models::load_checkpoint(fixture("mpnet"), torch::kCPU);
  const auto& config = dense.model->config();
  models::HeadMultipliers multipliers(3);
  multipliers[0] = torch::tensor({0.0F, 1.0F, 0.0F, 1.0F});
  multipliers[1] = torch::tensor({0.0F, 0.0F, 0.0F, 0.0F});
  const auto gated = hidden_of(*dense.model, &multipliers, "mpnet");

  auto ckpt = models::load_checkpoint(fixture("mpnet"), torch::kCPU);
  const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[0,2],"1":[0,1,2,3]})"), config);
  const auto out = testing::temp_dir("mpnet-uneven") / "out";
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto tolerance = testing::float32_tolerance(config, gated);
  CATCH_CHECK(max_diff(hidden_of(*ckpt.model, nullptr, "mpnet"), gated, "mpnet") <= tolerance);

  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["pruned_heads"] == nlohmann::json::parse(R"({"0":[0,2],"1":[0,1,2,3]})"));
  CATCH_CHECK(written["auto_map"]["AutoModel"] == "modeling_headprune_mpnet.HeadpruneMPNetModel");
  CATCH_CHECK(fs::exists(out / "modeling_headprune_mpnet.py"));
  const auto tensors = models::load_safetensors((out / "model.safetensors").string());
  CATCH_CHECK(tensors.at("encoder.layer.0.attention.attn.q.weight").size(0) == 2 * 16);
  CATCH_CHECK(tensors.at("encoder.layer.0.attention.attn.o.weight").size(1) == 2 * 16);
  CATCH_CHECK(tensors.at("encoder.layer.1.attention.attn.k.bias").size(0) == 0);
  CATCH_CHECK(tensors.count("encoder.layer.2.attention.LayerNorm.weight") == 1);
  // The shared table keeps every original head's column: layer 0 reads columns 1 and 3.
  CATCH_CHECK(tensors.at("encoder.relative_attention_bias.weight").sizes() == torch::IntArrayRef({32, 4}));
  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{2, 0, 4});
  CATCH_CHECK(max_diff(hidden_of(*reloaded.model, nullptr, "mpnet"), gated, "mpnet") <= tolerance);
}

CATCH_TEST_CASE("MPNet: the real all-mpnet-base-v2 tokenizer gives transformers' ids, its added <unk> included",
                "[encoder-families]") {
  const auto dir = fixture("mpnet_tokenizer");
  const auto tokenizer = models::WordPieceTokenizer::from_directory(dir);
  const auto encodings = models::read_json_file(dir / "encodings.json");
  CATCH_REQUIRE(encodings.at("cases").size() > 100);
  for (const auto& c : encodings.at("cases")) {
    const auto text = c.at("text").get<std::string>();
    CATCH_INFO(text);
    CATCH_CHECK(tokenizer.encode(text, 512) == c.at("ids").get<std::vector<int64_t>>());
  }
  // Without tokenizer.json's normalized "<unk>" (id 3), "<UNK>" would split into pieces.
  const auto no_json = testing::temp_dir("mpnet-vocab-only");
  for (const char* name : {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"})
    fs::copy_file(dir / name, no_json / name);
  CATCH_CHECK(models::WordPieceTokenizer::from_directory(no_json).encode("<UNK>", 512).size() > 3);
}

CATCH_TEST_CASE("MPNet: what it does not model is refused with one line naming it", "[encoder-families]") {
  CATCH_CHECK_THROWS_WITH(
      models::load_checkpoint(edited_config("mpnet-buckets", [](auto& c) { c["relative_attention_num_buckets"] = 16; },
                                            "mpnet"),
                              torch::kCPU),
      Catch::Contains("relative_attention_num_buckets 16 is below the 32 buckets"));
  const auto odd = edited_config("mpnet-odd", [](auto&) {}, "mpnet");
  auto weights = models::load_safetensors((fixture("mpnet") / "model.safetensors").string());
  weights["encoder.layer.2.attention.attn.rotary.weight"] = torch::zeros({4});
  models::save_safetensors(odd / "model.safetensors", weights);
  CATCH_CHECK_THROWS_WITH(models::load_checkpoint(odd, torch::kCPU),
                          Catch::Contains("'encoder.layer.2.attention.attn.rotary.weight' is not part of a MPNet layer"));
}

CATCH_TEST_CASE("RoBERTa: positions after padding_idx, last_hidden_state and ids equal transformers' RobertaModel",
                "[encoder-families]") {
  auto ckpt = models::load_checkpoint(fixture("roberta"), torch::kCPU);
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.model_type == "roberta");
  CATCH_CHECK(config.position_padding_idx == 1);
  CATCH_CHECK(config.type_vocab_size == 1);
  CATCH_CHECK(ckpt.unused_keys.empty());
  const auto& ref = reference("roberta").at("last_hidden_state");
  CATCH_CHECK(ref.size(1) > 130);  // positions near the end of the table (162 rows, 2 unused)
  const auto tolerance = testing::float32_tolerance(config, ref);
  const auto diff = max_diff(hidden_of(*ckpt.model, nullptr, "roberta"), ref, "roberta");
  CATCH_INFO("max |hidden - transformers| = " << diff << ", bound " << tolerance);
  CATCH_CHECK(diff <= tolerance);
  check_reference_ids(ckpt, "roberta");

  // The byte-level BPE tokenizer with RobertaProcessing: <s> ... </s>, on 71 texts.
  const auto encodings = models::read_json_file(fixture("roberta") / "encodings.json");
  CATCH_REQUIRE(encodings.at("cases").size() > 60);
  for (const auto& c : encodings.at("cases")) {
    CATCH_INFO(c.at("text").get<std::string>());
    CATCH_CHECK(ckpt.tokenizer->encode(c.at("text").get<std::string>(), 512) == c.at("ids").get<std::vector<int64_t>>());
  }
  CATCH_CHECK(ckpt.tokenizer->pad_id() == 1);
  // Inputs are cut to the 160 positions the 162-row table serves (its first 2 rows are unused).
  CATCH_CHECK(ckpt.max_seq_length == 160);

  // The positions matter (the check can fail): counted after padding_idx 0 instead, every
  // state moves.
  auto shifted = models::load_checkpoint(
      edited_config("roberta-pad0", [](auto& c) { c["pad_token_id"] = 0; }, "roberta"), torch::kCPU);
  CATCH_CHECK(max_diff(hidden_of(*shifted.model, nullptr, "roberta"), ref, "roberta") > 100 * tolerance);
}

CATCH_TEST_CASE("RoBERTa: removed heads equal zero multipliers, and the export carries the remote code and its import",
                "[encoder-families]") {
  auto dense = models::load_checkpoint(fixture("roberta"), torch::kCPU);
  const auto& config = dense.model->config();
  models::HeadMultipliers multipliers(3);
  multipliers[1] = torch::tensor({1.0F, 0.0F, 0.0F, 1.0F});
  multipliers[2] = torch::tensor({0.0F, 0.0F, 0.0F, 0.0F});
  const auto gated = hidden_of(*dense.model, &multipliers, "roberta");

  auto ckpt = models::load_checkpoint(fixture("roberta"), torch::kCPU);
  const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"1":[1,2],"2":[0,1,2,3]})"), config);
  const auto out = testing::temp_dir("roberta-uneven") / "out";
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto tolerance = testing::float32_tolerance(config, gated);
  CATCH_CHECK(max_diff(hidden_of(*ckpt.model, nullptr, "roberta"), gated, "roberta") <= tolerance);

  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["model_type"] == "roberta");
  CATCH_CHECK(written["pruned_heads"] == nlohmann::json::parse(R"({"1":[1,2],"2":[0,1,2,3]})"));
  CATCH_CHECK(written["auto_map"]["AutoModel"] == "modeling_headprune_roberta.HeadpruneRobertaModel");
  CATCH_CHECK(fs::exists(out / "modeling_headprune_roberta.py"));
  CATCH_CHECK(fs::exists(out / "modeling_headprune_bert.py"));  // imported by the RoBERTa file
  const auto tensors = models::load_safetensors((out / "model.safetensors").string());
  CATCH_CHECK(tensors.at("encoder.layer.1.attention.self.query.weight").size(0) == 2 * 16);
  CATCH_CHECK(tensors.at("encoder.layer.2.attention.output.dense.weight").size(1) == 0);
  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{4, 2, 0});
  CATCH_CHECK(max_diff(hidden_of(*reloaded.model, nullptr, "roberta"), gated, "roberta") <= tolerance);
}

CATCH_TEST_CASE("RoBERTa / XLM-R: what they do not model is refused with one line naming it", "[encoder-families]") {
  const auto refused = [](const fs::path& dir, const std::string& what) {
    CATCH_INFO(what);
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, torch::kCPU), Catch::Contains(what));
  };
  refused(edited_config("roberta-pad", [](auto& c) { c["pad_token_id"] = 600; }, "roberta"),
          "pad_token_id 600 is not a token of the vocabulary of 600");
  refused(edited_config("roberta-pos", [](auto& c) { c["position_embedding_type"] = "relative_key"; }, "roberta"),
          "'position_embedding_type' is \"relative_key\"");
  refused(edited_config("xlmr-key", [](auto& c) { c["model_type"] = "xlm-roberta"; c["mystery"] = 1; }, "roberta"),
          "key 'mystery' is not modelled by headprune for model_type 'xlm-roberta'");
  const auto task = edited_config(
      "roberta-task", [](auto& c) { c["architectures"] = {"RobertaForSequenceClassification"}; }, "roberta");
  models::TensorMap prefixed;
  for (const auto& [key, t] : models::load_safetensors((fixture("roberta") / "model.safetensors").string()))
    prefixed["roberta." + key] = t;
  prefixed["classifier.out_proj.weight"] = torch::zeros({2, 64});
  prefixed["classifier.out_proj.bias"] = torch::zeros({2});
  models::save_safetensors(task / "model.safetensors", prefixed);  // a head without its dense layer
  refused(task, "weight 'classifier.dense.weight' (shape [64, 64]) is missing");
}

CATCH_TEST_CASE("XLM-RoBERTa: last_hidden_state and Unigram ids equal transformers' XLMRobertaModel",
                "[encoder-families]") {
  auto ckpt = models::load_checkpoint(fixture("xlm_roberta"), torch::kCPU);
  const auto& config = ckpt.model->config();
  CATCH_CHECK(config.model_type == "xlm-roberta");
  CATCH_CHECK(config.position_padding_idx == 1);
  CATCH_CHECK(ckpt.unused_keys.empty());
  const auto& ref = reference("xlm_roberta").at("last_hidden_state");
  const auto tolerance = testing::float32_tolerance(config, ref);
  const auto diff = max_diff(hidden_of(*ckpt.model, nullptr, "xlm_roberta"), ref, "xlm_roberta");
  CATCH_INFO("max |hidden - transformers| = " << diff << ", bound " << tolerance);
  CATCH_CHECK(diff <= tolerance);
  check_reference_ids(ckpt, "xlm_roberta");  // the multilingual lines through the Unigram tokenizer

  const auto out = testing::temp_dir("xlmr-uneven") / "out";
  const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[3]})"), config);
  pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["model_type"] == "xlm-roberta");
  CATCH_CHECK(written["auto_map"]["AutoModel"] == "modeling_headprune_roberta.HeadpruneXLMRobertaModel");
  CATCH_CHECK(models::load_checkpoint(out, torch::kCPU).model->config().heads_per_layer() ==
              std::vector<int64_t>{3, 4, 4});
}

}  // namespace encoder_families_test
