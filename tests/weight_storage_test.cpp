// Frozen weights kept in the checkpoint's dtype (models/checkpoint.h WeightStorage::source,
// issue 37 item 1): a bfloat16 checkpoint's matrices stay bfloat16 in memory and are widened per
// use (models/linear.h widened_linear).
//
// Tolerances. Widening bfloat16 to float32 is exact (every bfloat16 value is a float32 value),
// and the forward pass then runs the same float32 kernels on the same values as a model whose
// weights were widened on load: logits are compared for equality, not within a bound. Backward
// takes the input gradient as its own product (g · W) instead of autograd's, so gradients are
// compared within float32_tolerance (tests/tolerance.h): summation order only.
#include <filesystem>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/formats/safetensors.h"
#include "models/linear.h"
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/objectives/chunked_kl.h"
#include "pruner/text/corpus.h"
#include "pruner/training/gate_training.h"
#include "pruner/training/memory_fit.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace weight_storage_test {

/// A copy of fixture `name` in a temporary folder with every floating-point tensor in bfloat16,
/// as checkpoints are published.
fs::path bfloat16_copy(const std::string& name) {
  const auto src = testing::fixture_path(name), dst = testing::temp_dir("bf16-" + name);
  for (const auto& entry : fs::directory_iterator(src))
    if (entry.path().filename() != "model.safetensors" && entry.path().filename() != "reference.safetensors")
      fs::copy_file(entry.path(), dst / entry.path().filename(), fs::copy_options::overwrite_existing);
  auto tensors = models::load_safetensors(src / "model.safetensors");
  for (auto& [key, t] : tensors)
    if (t.is_floating_point()) t = t.to(torch::kBFloat16);
  models::save_safetensors(dst / "model.safetensors", tensors);
  return dst;
}

int64_t parameter_bytes(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel() * p.element_size();
  return n;
}

/// Two padded sequences of ids below the vocabulary.
models::ModelInputs padded_batch(const models::ModelConfig& c) {
  torch::manual_seed(5);
  const auto ids = torch::randint(3, c.vocab_size, {2, 9}, torch::kLong);
  auto mask = torch::ones_like(ids);
  mask.index_put_({1, torch::indexing::Slice(6)}, 0);
  return {ids, mask, {}};
}

}  // namespace weight_storage_test

using namespace weight_storage_test;

CATCH_TEST_CASE("a bfloat16 checkpoint kept in its dtype computes exactly the logits of its float32 widening",
                "[weight_storage][llama]") {
  // llama3: RoPE scaling, tied head; qwen3: q/k norms folded in analysis, untied head; gemma3: the
  // embedding scale; phi3: fused projections split on load.
  for (const std::string name : {"llama3", "qwen3", "gemma3", "phi3"}) {
    CATCH_INFO(name);
    const auto dir = bfloat16_copy(name);
    const auto wide = models::load_checkpoint(dir, torch::kCPU);
    const auto narrow = models::load_checkpoint(dir, torch::kCPU, models::WeightStorage::source);
    const auto kept = narrow.model->narrow_storage_weights();
    CATCH_REQUIRE(!kept.empty());
    for (const auto& p : narrow.model->named_parameters(true))
      CATCH_CHECK(p.value().scalar_type() == (kept.count(p.key()) ? torch::kBFloat16 : torch::kFloat));
    for (const auto& p : wide.model->parameters()) CATCH_CHECK(p.scalar_type() == torch::kFloat);
    // Norm weights are the only float32 parameters: a little over half the bytes.
    CATCH_CHECK(parameter_bytes(*narrow.model) < 0.52 * parameter_bytes(*wide.model));

    torch::NoGradGuard no_grad;
    const auto in = padded_batch(wide.model->config());
    CATCH_CHECK(torch::equal(narrow.model->forward(in, nullptr).logits, wide.model->forward(in, nullptr).logits));
    models::KvCache a, b;
    CATCH_CHECK(torch::equal(narrow.model->forward_cached(in.input_ids, a), wide.model->forward_cached(in.input_ids, b)));
    const auto qk_narrow = narrow.model->query_key_weights(0), qk_wide = wide.model->query_key_weights(0);
    CATCH_CHECK(torch::equal(qk_narrow.query, qk_wide.query));
    // Export writes the file's dtype either way: the same tensors.
    const auto sd_narrow = models::checkpoint_state_dict(narrow), sd_wide = models::checkpoint_state_dict(wide);
    CATCH_REQUIRE(sd_narrow.size() == sd_wide.size());
    for (const auto& [key, t] : sd_wide) CATCH_CHECK(torch::equal(sd_narrow.at(key), t));
  }
}

CATCH_TEST_CASE("gate gradients through bfloat16-kept weights equal float32 storage's within float32 rounding",
                "[weight_storage][llama]") {
  const auto dir = bfloat16_copy("llama3");
  auto grads = [&](models::WeightStorage storage) {
    auto ckpt = models::load_checkpoint(dir, torch::kCPU, storage);
    for (auto& p : ckpt.model->parameters()) p.set_requires_grad(false);
    const auto& c = ckpt.model->config();
    models::HeadMultipliers m;
    for (auto h : c.heads_per_layer()) m.push_back(torch::full({h}, 0.7).set_requires_grad(true));
    ckpt.model->forward(padded_batch(c), &m).logits.pow(2).mean().backward();
    std::vector<torch::Tensor> g;
    for (auto& t : m) g.push_back(t.grad());
    return torch::cat(g);
  };
  const auto wide = grads(models::WeightStorage::float32), narrow = grads(models::WeightStorage::source);
  const auto config = models::read_config_file(dir);
  const double tol = testing::float32_tolerance(config, wide);
  CATCH_INFO("largest difference " << (narrow - wide).abs().max().item<double>() << ", bound " << tol);
  CATCH_CHECK((narrow - wide).abs().max().item<double>() <= tol);
  CATCH_CHECK(wide.abs().max().item<double>() > 1000 * tol);  // a gradient that is there to compare
}

CATCH_TEST_CASE("the chunked KL through a bfloat16 LM head widened in row blocks equals its float32 widening",
                "[weight_storage][chunked_kl]") {
  // 20,000 rows: three blocks of the 8,192 widened at a time. Loss: each logit is the same dot
  // product of length H, the per-token sums run over V; gradient rows (p_s − p_t)·W are summed
  // block by block, a different order over V: float32_tolerance with accumulation V + H.
  const int64_t n = 13, h = 8, v = 20000;
  torch::manual_seed(3);
  const auto hs = torch::randn({n, h}).set_requires_grad(true), ht = torch::randn({n, h});
  const auto w = (torch::randn({v, h}) / 2).to(torch::kBFloat16), wide_w = w.to(torch::kFloat);
  const auto narrow = pruner::chunked_token_kl_sum(hs, ht, {w, w, 5});
  const auto narrow_grad = torch::autograd::grad({narrow}, {hs})[0];
  const auto wide = pruner::chunked_token_kl_sum(hs, ht, {wide_w, wide_w, 5});
  const auto wide_grad = torch::autograd::grad({wide}, {hs})[0];
  const auto z = torch::matmul(hs.detach(), wide_w.t());
  const double loss_tol = testing::float32_tolerance(n * z.abs().max().item<double>(), 1, v + h);
  CATCH_CHECK(std::abs(narrow.item<double>() - wide.item<double>()) <= loss_tol);
  const auto dz = torch::softmax(z, -1) - torch::softmax(torch::matmul(ht, wide_w.t()), -1);
  const double grad_tol = testing::float32_tolerance(torch::matmul(dz.abs(), wide_w.abs()).max().item<double>(), 1, v + h);
  CATCH_INFO("gradient difference " << (narrow_grad - wide_grad).abs().max().item<double>() << ", bound " << grad_tol);
  CATCH_CHECK((narrow_grad - wide_grad).abs().max().item<double>() <= grad_tol);
  CATCH_CHECK(wide_grad.abs().max().item<double>() > 100 * grad_tol);
}

CATCH_TEST_CASE("folding a gate into a bfloat16-kept output projection rounds once, as export of float32 storage does",
                "[weight_storage][surgery]") {
  const auto dir = bfloat16_copy("llama3");
  auto wide = models::load_checkpoint(dir, torch::kCPU);
  auto narrow = models::load_checkpoint(dir, torch::kCPU, models::WeightStorage::source);
  const auto heads = wide.model->config().heads_per_layer()[0];
  const auto scale = torch::linspace(0.3, 0.9, heads);
  for (auto* ckpt : {&wide, &narrow}) ckpt->model->prune_heads(0, {1}, scale);
  models::round_to_source_dtypes(wide);
  const auto sd_narrow = models::checkpoint_state_dict(narrow), sd_wide = models::checkpoint_state_dict(wide);
  for (const auto& [key, t] : sd_wide) {
    CATCH_INFO(key);
    CATCH_CHECK(torch::equal(sd_narrow.at(key), t));
  }
}

CATCH_TEST_CASE("train-weights trains float32 weights after a bfloat16 checkpoint loads kept in its dtype",
                "[weight_storage][training]") {
  const auto dir = bfloat16_copy("llama3");
  auto ckpt = models::load_checkpoint(dir, torch::kCPU, models::WeightStorage::source);
  pruner::CorpusOptions co;
  co.max_length = 16;
  co.max_lines = 40;
  const auto corpus = pruner::load_corpus({testing::shared_data_dir() / "corpus" / "tinyshakespeare_input.txt"}, *ckpt.tokenizer, co);
  pruner::GateTrainingOptions o;
  o.target_sparsity = 0.5;
  o.steps = 3;
  o.max_extra_steps = 0;
  o.batch_size = 4;
  o.train_weights = true;
  o.finetune_steps = 2;
  o.save_every = 0;
  o.out_dir = testing::temp_dir("bf16-train-weights");
  const auto before = ckpt.model->named_parameters(true)["model.layers.0.mlp.up_proj.weight"].clone();
  pruner::train_gates(ckpt, corpus, o);
  for (const auto& p : ckpt.model->parameters()) CATCH_CHECK(p.scalar_type() == torch::kFloat);
  const auto after = ckpt.model->named_parameters(true)["model.layers.0.mlp.up_proj.weight"];
  CATCH_CHECK(!torch::equal(after, before.to(torch::kFloat)));  // trained, in float32
}

CATCH_TEST_CASE("the memory estimate counts a checkpoint's weights as loading holds them and refuses what cannot fit",
                "[weight_storage][memory]") {
  const auto dir = bfloat16_copy("llama3");
  pruner::GateTrainingOptions o;
  const auto config = models::read_config_file(dir);
  const int64_t tokens = 4 * 64;
  const auto need = pruner::gate_training_memory_need(dir, o, tokens);
  CATCH_REQUIRE(need.has_value());
  CATCH_CHECK(need->weights ==
              parameter_bytes(*models::load_checkpoint(dir, torch::kCPU, models::WeightStorage::source).model));
  CATCH_CHECK(need->activations == tokens * config.num_hidden_layers * (config.hidden_size + config.intermediate_size) * 4);
  CATCH_CHECK(need->weight_training == 0);
  o.checkpoint_layers = "on";  // each layer's input, and one layer recomputed at a time
  CATCH_CHECK(pruner::gate_training_memory_need(dir, o, tokens)->activations ==
              tokens * (config.num_hidden_layers * config.hidden_size + config.hidden_size + config.intermediate_size) * 4);
  o.checkpoint_layers = "auto";
  o.float32_weights = true;
  const auto wide = pruner::gate_training_memory_need(dir, o, tokens);
  CATCH_CHECK(wide->weights == parameter_bytes(*models::load_checkpoint(dir, torch::kCPU).model));
  o.train_weights = true;  // a frozen teacher as stored, the student in float32, gradients and AdamW
  const auto trained = pruner::gate_training_memory_need(dir, o, tokens);
  CATCH_CHECK(trained->weights == 2 * wide->weights);
  CATCH_CHECK(trained->weight_training == 3 * wide->weights);

  CATCH_CHECK(pruner::cannot_fit_reason(*trained, trained->total(), o).empty());
  const auto reason = pruner::cannot_fit_reason(*trained, trained->total() - 1, o);
  CATCH_INFO(reason);
  for (const char* part : {"needs at least", "is available", "--batch-size", "--max-length", "--train-weights",
                           "--float32-weights"})
    CATCH_CHECK(reason.find(part) != std::string::npos);
  // A single file's size is not read before loading: no estimate, no refusal.
  CATCH_CHECK(!pruner::gate_training_memory_need(testing::fixture_path("gguf") / "tiny-llama.gguf", o, tokens));
  // On the command line, before loading: 10^6 tokens per step in 10^5-token sequences.
  const auto out = testing::temp_dir("bf16-cannot-fit");
  CATCH_CHECK(testing::run_cli({"train-gates", dir.string(), "--data",
                                (testing::shared_data_dir() / "corpus" / "tinyshakespeare_input.txt").string(),
                                "--target-sparsity", "0.5", "--batch-size", "1000000", "--max-length", "100000",
                                "-o", (out / "gates").string()}) == 1);
  CATCH_CHECK(!fs::exists(out / "gates" / "gates.json"));
}

CATCH_TEST_CASE("weights a checkpoint will set are allocated unfilled while it loads, and filled otherwise",
                "[weight_storage]") {
  CATCH_CHECK_FALSE(models::ScopedUnfilledWeights::active());
  {
    const models::ScopedUnfilledWeights outer;
    {
      const models::ScopedUnfilledWeights inner;
      CATCH_CHECK(models::ScopedUnfilledWeights::active());
    }
    CATCH_CHECK(models::ScopedUnfilledWeights::active());  // the inner one restores the outer state
  }
  CATCH_CHECK_FALSE(models::ScopedUnfilledWeights::active());
  // Outside a load a Linear starts N(0, 0.02²): 64 x 64 draws have a standard deviation within
  // 10% of 0.02 (the sample's relative spread is 1/sqrt(2 · 4096) = 1.1%).
  const models::Linear filled(64, 64);
  CATCH_CHECK(std::abs(filled->weight.std().item<double>() / 0.02 - 1) < 0.1);
  // A loaded model holds the file's values in every parameter, in float32 and in the file's dtype.
  const auto dir = testing::fixture_path("llama3");
  for (auto storage : {models::WeightStorage::float32, models::WeightStorage::source}) {
    const auto ckpt = models::load_checkpoint(dir, torch::kCPU, storage);
    const auto file = models::load_safetensors(dir / "model.safetensors");
    std::size_t compared = 0;
    for (const auto& p : ckpt.model->named_parameters(true)) {
      CATCH_REQUIRE(file.count(p.key()));
      CATCH_CHECK(torch::equal(p.value(), file.at(p.key()).to(p.value().dtype())));
      ++compared;
    }
    CATCH_CHECK(compared == file.size());
  }
}
