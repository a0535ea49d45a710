// The sequence-classification heads of the encoder families beyond BERT against transformers
// 5.24's own classes: tests/fixtures/<family>_classifier (tools/make_encoder_fixtures.py), a
// DistilBertForSequenceClassification, MPNetForSequenceClassification,
// RobertaForSequenceClassification, XLMRobertaForSequenceClassification and
// ModernBertForSequenceClassification (mean pooling, GELU, a LayerNorm) that transformers made
// and saved over the encoder fixtures, with 3-label heads and the logits of eight WikiText-2 lines.
// Tolerance: the encoder's float32 bound (tests/tolerance.h) on the pooled state, carried
// through the head's two layers by their infinity norms (tanh and ReLU do not grow a
// difference, GELU by at most 1.13) and ModernBERT's LayerNorm by its Jacobian's bound
// max|γ| / σ · (2 + max|x̂|) on the texts' own rows, plus the head's own rounding. transformers reloading the pruned exports is
// tools/check_interop.py's "<family>_classifier uneven" cases.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/activation.h"
#include "models/checkpoint.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

// Helpers and cases in one named namespace: the tests build in unity batches (CMakeLists.txt).
namespace classifier_families_test {

const std::vector<std::string> kFamilies = {"distilbert", "mpnet", "roberta", "xlm_roberta", "modernbert"};

/// The classifier's logits [8, 3] on the fixture's reference batch, and the pooled final state
/// [8, hidden] they came from (the first token's, or the mean over real tokens).
std::pair<torch::Tensor, torch::Tensor> logits_of(models::Checkpoint& ckpt, const models::TensorMap& ref) {
  torch::NoGradGuard no_grad;
  const auto& mask = ref.at("attention_mask");
  const auto hidden = ckpt.model->forward({ref.at("input_ids"), mask, {}}, nullptr).last_hidden_state;
  const auto real = mask.to(hidden.dtype()).unsqueeze(-1);
  const auto pooled = ckpt.classifier->layout.pooling == "mean" ? (hidden * real).sum(1) / real.sum(1) : hidden.select(1, 0);
  return {ckpt.classifier->forward(*ckpt.model, hidden, mask), pooled};
}

/// How much the head's LayerNorm (if any) can grow a difference in its input, in the infinity
/// norm: max|γ| / σ · (2 + max|x̂|) over the rows it sees for `pooled` (1 without a norm).
double norm_gain(const models::SequenceClassificationHeadImpl& head, const torch::Tensor& pooled) {
  if (!head.norm) return 1.0;
  const auto x = models::hf_activation(torch::linear(pooled, head.dense->weight, head.dense->bias), head.layout.activation);
  const auto sigma = x.std(1, /*unbiased=*/false);
  const auto x_hat = (x - x.mean(1, true)) / sigma.unsqueeze(1);
  return head.norm->weight.abs().max().item<double>() / sigma.min().item<double>() *
         (2.0 + x_hat.abs().max().item<double>());
}

/// The bound on |logits - transformers'| described at the top of this file.
double logits_tolerance(const models::Checkpoint& ckpt, const torch::Tensor& pooled, const torch::Tensor& ref_logits) {
  torch::NoGradGuard no_grad;
  const auto& config = ckpt.model->config();
  const auto inf_norm = [](const torch::Tensor& w) { return w.abs().sum(1).max().item<double>(); };
  const auto& head = *ckpt.classifier;
  const double activation_gain = head.layout.activation == "gelu" ? 1.13 : 1.0;  // max GELU slope 1.129
  return testing::float32_tolerance(pooled, config.num_hidden_layers,
                                    std::max(config.hidden_size, config.intermediate_size)) *
             inf_norm(head.dense->weight) * activation_gain * norm_gain(head, pooled) * inf_norm(head.out_proj->weight) +
         testing::float32_tolerance(ref_logits, head.norm ? 3 : 2, config.hidden_size);
}


CATCH_TEST_CASE("classifier heads: logits equal transformers' DistilBERT / MPNet / RoBERTa / XLM-R / ModernBERT ForSequenceClassification",
                "[encoder-families][classification]") {
  for (const auto& family : kFamilies) {
    CATCH_INFO(family);
    const auto dir = testing::fixture_path(family + "_classifier");
    auto ckpt = models::load_checkpoint(dir, torch::kCPU);
    CATCH_REQUIRE(ckpt.classifier);
    CATCH_CHECK(ckpt.unused_keys.empty());
    CATCH_CHECK(ckpt.classifier->labels == std::vector<std::string>{"negative", "neutral", "positive"});
    const auto ref = models::load_safetensors((dir / "reference.safetensors").string());
    const auto [logits, first] = logits_of(ckpt, ref);
    const auto& expected = ref.at("logits");
    const auto diff = (logits - expected).abs().max().item<double>();
    const auto tolerance = logits_tolerance(ckpt, first, expected);
    CATCH_INFO("max |logits - transformers| = " << diff << ", bound " << tolerance);
    CATCH_CHECK(diff <= tolerance);
    // The check can fail: the other activation moves the logits past the bound.
    auto& head = *ckpt.classifier;
    const auto activation = head.layout.activation;
    head.layout.activation = activation == "tanh" ? "relu" : "tanh";
    CATCH_CHECK((logits_of(ckpt, ref).first - expected).abs().max().item<double>() > tolerance);
    head.layout.activation = activation;
  }
}

CATCH_TEST_CASE("classifier heads: a pruned export writes the task class's layout and reloads with equal logits",
                "[encoder-families][classification]") {
  // name in the file of the encoder's first query weight, its rows after the prune, and the head's tensors
  struct Layout {
    std::string query;
    int64_t rows;
    std::vector<std::string> head;
  };
  const std::vector<Layout> layouts = {
      {"distilbert.transformer.layer.0.attention.q_lin.weight", 2 * 16, {"pre_classifier.weight", "classifier.weight"}},
      {"mpnet.encoder.layer.0.attention.attn.q.weight", 2 * 16, {"classifier.dense.weight", "classifier.out_proj.weight"}},
      {"roberta.encoder.layer.0.attention.self.query.weight", 2 * 16,
       {"classifier.dense.weight", "classifier.out_proj.weight"}},
      {"roberta.encoder.layer.0.attention.self.query.weight", 2 * 16,
       {"classifier.dense.weight", "classifier.out_proj.weight"}},
      {"model.layers.0.attn.Wqkv.weight", 3 * 2 * 16, {"head.dense.weight", "head.norm.weight", "classifier.weight"}}};
  for (size_t i = 0; i < kFamilies.size(); ++i) {
    const auto& family = kFamilies[i];
    CATCH_INFO(family);
    const auto dir = testing::fixture_path(family + "_classifier");
    const auto ref = models::load_safetensors((dir / "reference.safetensors").string());
    auto ckpt = models::load_checkpoint(dir, torch::kCPU);
    const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0":[1,2],"2":[3]})"),
                                                     ckpt.model->config());
    const auto out = testing::temp_dir(family + "-classifier-uneven") / "out";
    pruner::apply_and_export(ckpt, plan, out, false, {{"command", "test"}}, torch::kCPU);
    const auto [pruned, first] = logits_of(ckpt, ref);

    const auto tensors = models::load_safetensors((out / "model.safetensors").string());
    CATCH_CHECK(tensors.at(layouts[i].query).size(0) == layouts[i].rows);
    for (const auto& key : layouts[i].head) CATCH_CHECK(tensors.count(key) == 1);
    const auto config = models::read_json_file(out / "config.json");
    CATCH_CHECK(config["auto_map"].contains("AutoModelForSequenceClassification"));
    auto reloaded = models::load_checkpoint(out, torch::kCPU);
    CATCH_REQUIRE(reloaded.classifier);
    CATCH_CHECK(reloaded.model->config().heads_per_layer() == std::vector<int64_t>{2, 4, 3});
    CATCH_CHECK((logits_of(reloaded, ref).first - pruned).abs().max().item<double>() <=
                logits_tolerance(reloaded, first, pruned));
  }
}

CATCH_TEST_CASE("classifier heads: an encoder tensor both with and without the task prefix is refused",
                "[encoder-families][classification]") {
  const auto source = testing::fixture_path("roberta_classifier");
  const auto dir = testing::temp_dir("roberta-classifier-twice");
  for (const auto* name : {"config.json", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(source / name, dir / name);
  auto weights = models::load_safetensors((source / "model.safetensors").string());
  weights["embeddings.word_embeddings.weight"] = weights.at("roberta.embeddings.word_embeddings.weight");
  models::save_safetensors(dir / "model.safetensors", weights);
  CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, torch::kCPU),
                          Catch::Contains("tensor 'embeddings.word_embeddings.weight' is there both with and "
                                          "without the 'roberta.' prefix"));
}

}  // namespace classifier_families_test
