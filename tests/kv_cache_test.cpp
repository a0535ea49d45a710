// What a KV cache costs (models/kv_cache.h) and the decode benchmark (pruner/measure/
// decode_bench.h): the per-token count against the tensors a real cached decode holds, dense and
// with query heads or whole KV groups removed; the benchmark's bytes against the same arithmetic;
// and what it refuses. Timings are not checked (benchmarks measure, tests do not time).
#include <catch2/catch.hpp>

#include "models/config.h"
#include "models/kv_cache.h"
#include "models/loader.h"
#include "models/model_size.h"
#include "pruner/measure/decode_bench.h"
#include "pruner/measure/process_memory.h"
#include "pruner/report/report.h"
#include "pruner/training/sparsity_measure.h"
#include "models/registry.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace {

models::Checkpoint load(const std::string& fixture) {
  return models::load_checkpoint(testing::fixture_path(fixture).string(), torch::kCPU);
}

/// The bytes a cached decode of `batch` sequences of `positions` tokens leaves in its cache.
int64_t cached_bytes(models::AttentionModel& model, int64_t batch, int64_t positions) {
  torch::NoGradGuard no_grad;
  models::KvCache cache;
  model.forward_cached(torch::randint(5, 300, {batch, positions - 1}, torch::kLong), cache);
  model.forward_cached(torch::randint(5, 300, {batch, 1}, torch::kLong), cache);
  return models::held_bytes(cache);
}

pruner::DecodeBenchOptions tiny_grid() {
  pruner::DecodeBenchOptions o;
  o.batches = {2};
  o.contexts = {12};
  o.new_tokens = 3;
  o.repeat = {0, 1, 1, 0.05, 60};
  return o;
}

}  // namespace

CATCH_TEST_CASE("KV values per token: 2 x KV heads present x head_dim per layer, as a cached decode holds them",
                "[kv_cache]") {
  auto ckpt = load("llama3");  // 3 layers, 4 query heads sharing 2 KV heads, head_dim 16
  auto& model = *ckpt.model;
  CATCH_CHECK(models::kv_values_per_token_per_layer(model.config()) == std::vector<int64_t>{64, 64, 64});
  CATCH_CHECK(cached_bytes(model, 3, 10) == 3 * 10 * models::kv_values_per_token(model.config()) * 4);
  model.prune_heads(0, {0}, {});     // one query head of group 0: both KV heads still read
  model.prune_heads(1, {0, 1}, {});  // all of group 0: one KV head left
  model.prune_heads(2, {1, 2}, {});  // one head of each group: both stay
  CATCH_CHECK(models::kv_values_per_token_per_layer(model.config()) == std::vector<int64_t>{64, 32, 64});
  CATCH_CHECK(cached_bytes(model, 2, 7) == 2 * 7 * 160 * 4);
}

CATCH_TEST_CASE("decode weight bytes: every parameter, an untied input embedding as one row", "[kv_cache]") {
  auto tied = load("llama3");
  CATCH_CHECK(pruner::decode_weight_bytes(*tied.model) == models::parameter_count(*tied.model) * 4);
  auto untied = load("mistral");
  const auto& c = untied.model->config();
  CATCH_REQUIRE_FALSE(c.tie_word_embeddings);
  CATCH_CHECK(pruner::decode_weight_bytes(*untied.model) ==
              (models::parameter_count(*untied.model) - (c.vocab_size - 1) * c.hidden_size) * 4);
}

CATCH_TEST_CASE("the decode benchmark reports the caches it held and the bytes a step reads", "[kv_cache]") {
  auto dense = load("llama3");
  auto pruned = load("llama3");
  for (int64_t layer = 0; layer < 3; ++layer) pruned.model->prune_heads(layer, {2, 3}, {});  // KV group 1
  const auto o = tiny_grid();
  const auto report = pruner::run_decode_bench(*dense.model, *pruned.model, o);
  CATCH_REQUIRE(report.results.size() == 1);
  const auto& cell = report.results[0];
  CATCH_CHECK(cell.reps == 1);
  const int64_t positions = 12 + 3;
  CATCH_CHECK(cell.dense.kv_cache_bytes == 2 * positions * 192 * 4);
  CATCH_CHECK(cell.pruned.kv_cache_bytes == 2 * positions * 96 * 4);
  const double mean_positions = 12 + 1.5;
  const auto dense_bytes = static_cast<double>(pruner::decode_weight_bytes(*dense.model)) + 2 * mean_positions * 192 * 4;
  const auto pruned_bytes =
      static_cast<double>(pruner::decode_weight_bytes(*pruned.model)) + 2 * mean_positions * 96 * 4;
  CATCH_CHECK(cell.dense.bytes_read_per_step == Approx(dense_bytes).epsilon(1e-12));
  CATCH_CHECK(cell.bytes_ratio == Approx(dense_bytes / pruned_bytes).epsilon(1e-12));
  CATCH_CHECK(cell.dense.decode_ms_per_token > 0);
  CATCH_CHECK(cell.pruned.prefill_ms > 0);
  // Linux /proc: each model's untimed rep raised the resident memory by at least a page.
  if (pruner::reset_peak_resident()) {
    CATCH_CHECK(cell.dense.peak_working_bytes >= 4096);
    CATCH_CHECK(cell.pruned.peak_working_bytes >= 4096);
  }
}

CATCH_TEST_CASE("the decode benchmark refuses encoders, contexts past the positions and an empty grid, named",
                "[kv_cache]") {
  auto decoder = load("llama3");
  auto encoder = load("roberta");
  auto o = tiny_grid();
  CATCH_CHECK_THROWS_WITH(pruner::run_decode_bench(*encoder.model, *encoder.model, o),
                          Catch::Contains("'roberta' model is an encoder"));
  o.contexts = {254};  // 254 + 3 new tokens > max_position_embeddings 256
  CATCH_CHECK_THROWS_WITH(pruner::run_decode_bench(*decoder.model, *decoder.model, o),
                          Catch::Contains("context 254 with 3 new tokens is outside the model's 256 positions"));
  o.contexts.clear();
  CATCH_CHECK_THROWS_WITH(pruner::run_decode_bench(*decoder.model, *decoder.model, o), Catch::Contains("grid is empty"));
}

CATCH_TEST_CASE("bench --decode: flags of the other grid refused, exit 2, a decoder runs, exit 0", "[kv_cache][cli]") {
  const auto model = testing::fixture_path("llama3").string();
  CATCH_CHECK(testing::run_cli({"bench", model, model, "--context", "16"}) == 2);
  CATCH_CHECK(testing::run_cli({"bench", model, model, "--decode", "--seq-len", "16"}) == 2);
  CATCH_CHECK(testing::run_cli({"bench", model, model, "--decode", "--new-tokens", "0"}) == 2);
  CATCH_CHECK(testing::run_cli({"bench", model, model, "--decode", "--min-reps", "4", "--max-reps", "3"}) == 2);
  CATCH_CHECK(testing::run_cli({"bench", model, model, "--decode", "--context", "300"}) == 1);
  CATCH_CHECK(testing::run_cli({"bench", model, model, "--decode", "--context", "8", "--new-tokens", "2",
                                "--warmup", "0", "--min-reps", "1", "--max-reps", "1"}) == 0);
}

CATCH_TEST_CASE("report gives a decoder checkpoint's KV cache per token before and after, only whole groups count",
                "[kv_cache][report]") {
  const auto model = testing::fixture_path("llama3").string();
  const auto dir = testing::temp_dir("kv_report");
  // Layer 0 loses KV group 0 (query heads 0, 1); layer 1 one head of group 1 (its KV head stays).
  CATCH_REQUIRE(testing::run_cli({"apply", model, "--remove-heads", R"({"0": [0, 1], "1": [3]})", "-o",
                                  (dir / "pruned").string()}) == 0);
  const auto report = pruner::load_report(dir / "pruned");
  CATCH_CHECK(report.kv_values_per_token_original == 3 * 2 * 2 * 16);
  CATCH_CHECK(report.kv_values_per_token == (1 + 2 + 2) * 2 * 16);
  CATCH_CHECK(pruner::to_json(report).at("kv_cache_values_per_token") ==
              nlohmann::json{{"original", 192}, {"kept", 160}});
  CATCH_CHECK_THAT(pruner::to_text(report), Catch::Contains("KV cache per token: 0.38 -> 0.31 KiB at F16 (192 -> 160 numbers, 1.20x smaller)"));
  const auto encoder = pruner::load_report(testing::fixture_path("roberta"));
  CATCH_CHECK(encoder.kv_values_per_token == 0);
  CATCH_CHECK_FALSE(pruner::to_json(encoder).contains("kv_cache_values_per_token"));
}

CATCH_TEST_CASE("sparsity unit kv-cache: a KV group costs 2 x head_dim, shared by its query heads present",
                "[kv_cache][sparsity]") {
  auto ckpt = load("llama3");  // 3 layers, 2 KV groups of 2 query heads, head_dim 16
  auto m = pruner::sparsity_measure(ckpt.model->config(), gates::SparsityUnit::kKvCache, 128);
  CATCH_CHECK(m.total_cost == 192);
  CATCH_CHECK(m.head_cost == std::vector<double>(12, 16.0));
  ckpt.model->prune_heads(0, {0}, {});  // head 1 alone holds group 0 of layer 0: it carries its 32
  m = pruner::sparsity_measure(ckpt.model->config(), gates::SparsityUnit::kKvCache, 128);
  CATCH_CHECK(m.total_cost == 192);
  CATCH_CHECK(m.head_cost == std::vector<double>{32, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16});
  auto encoder = load("roberta");
  CATCH_CHECK_THROWS_WITH(pruner::sparsity_measure(encoder.model->config(), gates::SparsityUnit::kKvCache, 128),
                          Catch::Contains("a 'roberta' model is an encoder and keeps no KV cache"));
}

CATCH_TEST_CASE("train-gates --sparsity-unit kv-cache removes whole KV groups to the target, other group rules refused",
                "[kv_cache][sparsity][cli]") {
  testing::Workspace w("kv_unit");  // for its English corpus
  auto train = [&](const std::string& fixture, const std::filesystem::path& out, const std::string& mode) {
    std::vector<std::string> args{"train-gates", testing::fixture_path(fixture).string(), "--data", w.corpus.string(),
                                  "--target-sparsity", "0.5", "--sparsity-unit", "kv-cache", "--steps", "4",
                                  "--batch-size", "8", "--out", out.string()};
    if (!mode.empty()) args.insert(args.end(), {"--gqa-mode", mode});
    return testing::run_cli(args);
  };
  const auto gates = w.dir / "gates";
  CATCH_CHECK(train("llama3", gates, "") == 2);  // --gqa-mode uniform, the default
  CATCH_CHECK(train("llama3", gates, "none") == 2);
  CATCH_CHECK_FALSE(std::filesystem::exists(gates));
  CATCH_REQUIRE(train("llama3", gates, "groups") == 0);
  const auto pruned = w.dir / "pruned";
  CATCH_REQUIRE(testing::run_cli({"apply", testing::fixture_path("llama3").string(), "--gates", gates.string(), "-o",
                                  pruned.string()}) == 0);
  CATCH_CHECK(models::kv_values_per_token(models::read_config_file(pruned)) == 96);  // 3 of 6 groups
  CATCH_CHECK(train("roberta", w.dir / "encoder-gates", "groups") == 1);
  CATCH_CHECK_FALSE(std::filesystem::exists(w.dir / "encoder-gates"));
}

CATCH_TEST_CASE("prune --target-kv-bytes closes whole KV groups until the F16 cache fits and refuses what cannot",
                "[kv_cache][sparsity][cli]") {
  testing::Workspace w("kv_budget");
  // llama3: 3 layers of 2 KV groups, head_dim 16: 2 x 6 x 16 = 192 cached numbers, 384 bytes at F16.
  auto prune = [&](const std::string& fixture, const std::filesystem::path& out, std::vector<std::string> extra) {
    std::vector<std::string> args{"prune", testing::fixture_path(fixture).string(), "--data", w.corpus.string(),
                                  "--steps", "4", "--batch-size", "8", "--max-length", "16", "--no-bench", "-o",
                                  out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  };
  const auto out = w.dir / "kv200";
  CATCH_REQUIRE(prune("llama3", out, {"--target-kv-bytes", "200"}) == 0);
  const auto gates = models::read_json_file(out / "headprune" / "summary.json").at("gates");
  CATCH_CHECK(gates.at("dense_kv_bytes_per_token").get<double>() == 384);
  CATCH_CHECK(gates.at("target_kv_bytes_per_token").get<double>() == 200);
  // 200 bytes hold 100 numbers: three of the six 32-number groups must go, and no more.
  const auto config = models::read_config_file(out);
  CATCH_CHECK(2 * models::kv_values_per_token(config) == 192);
  CATCH_CHECK(gates.at("achieved_kv_bytes_per_token").get<double>() == 192);
  const auto kv_heads = config.kept_kv_heads();
  for (size_t l = 0; l < kv_heads.size(); ++l)  // whole groups: every kept KV head keeps both its query heads
    CATCH_CHECK(static_cast<int64_t>(config.kept_heads[l].size()) ==
                static_cast<int64_t>(kv_heads[l].size()) * config.kv_group_size());
  // 150 bytes: every layer keeps a head, so one group each (192 bytes) is the least. Refused, nothing written.
  CATCH_CHECK(prune("llama3", w.dir / "kv150", {"--target-kv-bytes", "150"}) == 1);
  CATCH_CHECK(prune("llama3", w.dir / "kv-uniform", {"--target-kv-bytes", "50%", "--gqa-mode", "uniform"}) == 2);
  CATCH_CHECK(prune("llama3", w.dir / "kv-unit", {"--target-kv-bytes", "50%", "--sparsity-unit", "kv-cache"}) == 2);
  CATCH_CHECK(prune("llama3", w.dir / "kv-two", {"--target-kv-bytes", "50%", "--target-sparsity", "0.5"}) == 2);
  CATCH_CHECK(prune("llama3", w.dir / "kv-zero", {"--target-kv-bytes", "0"}) == 2);
  CATCH_CHECK(prune("roberta", w.dir / "kv-encoder", {"--target-kv-bytes", "50%"}) == 1);
  for (const auto* name : {"kv150", "kv-uniform", "kv-unit", "kv-two", "kv-zero", "kv-encoder"})
    CATCH_CHECK_FALSE(std::filesystem::exists(w.dir / name));
}

CATCH_TEST_CASE("one-token decoding steps give the uncached logits, whole groups read in place or uneven ones gathered",
                "[kv_cache]") {
  // gemma3: query_pre_attn_scalar and sliding windows of 8 (the 20 positions pass them); llama3
  // dense, then with uneven groups in layers 0 and 2 (the gathered path) beside a whole layer 1.
  for (const std::string fixture : {"llama3", "gemma3", "llama3-uneven"}) {
    CATCH_INFO(fixture);
    auto ckpt = load(fixture == "llama3-uneven" ? "llama3" : fixture);
    if (fixture == "llama3-uneven") {
      ckpt.model->prune_heads(0, {1}, {});
      ckpt.model->prune_heads(2, {0, 1, 2}, {});
    }
    torch::NoGradGuard no_grad;
    const auto ids = torch::randint(5, 300, {2, 20}, torch::kLong);
    const auto full = ckpt.model->forward({ids, {}, {}}, nullptr).logits;  // [2, 20, vocab]
    models::KvCache cache;
    std::vector<torch::Tensor> steps{ckpt.model->forward_cached(ids.slice(1, 0, 8), cache)};
    for (int64_t t = 8; t < 20; ++t) steps.push_back(ckpt.model->forward_cached(ids.slice(1, t, t + 1), cache));
    const auto diff = (torch::cat(steps, 1) - full).abs().max().item<double>();
    CATCH_INFO("max |stepped - uncached| = " << diff);
    CATCH_CHECK(diff <= testing::float32_tolerance(ckpt.model->config(), full));
  }
}
