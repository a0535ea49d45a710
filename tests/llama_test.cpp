// The LLaMA decoder on the real stories260K model (llama2.c format, 8 query heads sharing 4 KV
// heads): greedy text, logits against HF transformers, the tok512 tokenizer against
// SentencePiece, and 0/1 query-head multipliers against physical removal with GQA groups.
// References: tests/fixtures/stories260K/tokens.json (tools/make_stories260k_tokens.py) and
// reference.safetensors (tools/make_stories260k_logits.py). Tolerances: the float32 rounding
// bound of tests/tolerance.h, from the logits' scale, the depth and the FFN width.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/formats/llama2c.h"
#include "models/formats/safetensors.h"
#include "models/generation.h"
#include "models/llama/llama_model.h"
#include "models/loader.h"
#include "models/registry.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "pruner/cli/command.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

const std::string kGreedyText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, r";

fs::path stories_bin() { return testing::stories_dir() / "stories260K.bin"; }
fs::path stories_tok() { return testing::stories_dir() / "tok512.bin"; }

const models::Llama2cTokenizer& tokenizer() {
  static const auto tok = models::Llama2cTokenizer::from_file(stories_tok(), 512);
  return tok;
}

models::Checkpoint load_stories() { return models::load_checkpoint(stories_bin(), torch::kCPU); }

models::LlamaModel& as_llama(models::Checkpoint& ckpt) {
  return dynamic_cast<models::LlamaModel&>(*ckpt.model);
}

const nlohmann::json& token_cases() {
  static const auto cases =
      models::read_json_file(testing::fixture_path("stories260K/tokens.json"))["cases"];
  return cases;
}

/// Several fixture sentences (BOS + ids), right-padded into one batch.
models::ModelInputs real_batch() {
  std::vector<std::vector<int64_t>> rows;
  for (size_t i = 0; i < 8; ++i) {
    auto ids = token_cases()[i]["ids"].get<std::vector<int64_t>>();
    ids.insert(ids.begin(), models::Llama2cTokenizer::kBos);
    rows.push_back(ids);
  }
  size_t T = 0;
  for (const auto& r : rows) T = std::max(T, r.size());
  auto ids = torch::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(T)}, torch::kLong);
  auto mask = torch::zeros_like(ids);
  for (size_t b = 0; b < rows.size(); ++b)
    for (size_t t = 0; t < rows[b].size(); ++t) {
      ids[b][t] = rows[b][t];
      mask[b][t] = 1;
    }
  return {ids, mask, {}};
}

/// Largest |a - b| over real (unpadded) positions.
double masked_max_diff(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask) {
  return ((a - b) * mask.unsqueeze(-1).to(a.dtype())).abs().max().item<double>();
}

/// 0/1 multipliers for 8 query heads per layer from {layer: removed original heads}.
models::HeadMultipliers multipliers_for(const std::map<int64_t, std::vector<int64_t>>& removed,
                                        int64_t layers, int64_t heads) {
  models::HeadMultipliers m;
  for (int64_t l = 0; l < layers; ++l) {
    auto gate = torch::ones({heads});
    if (removed.count(l))
      for (auto h : removed.at(l)) gate[h] = 0.0;
    m.push_back(gate);
  }
  return m;
}

/// Gated dense model vs the physically pruned one; checks shapes and reload from a folder.
void check_masking_equals_pruning(const std::map<int64_t, std::vector<int64_t>>& removed,
                                  const std::vector<std::vector<int64_t>>& expect_kept,
                                  const std::vector<std::vector<int64_t>>& expect_kv,
                                  bool expect_uniform) {
  auto ckpt = load_stories();
  auto& model = as_llama(ckpt);
  const auto in = real_batch();
  torch::NoGradGuard no_grad;
  auto mult = multipliers_for(removed, 5, 8);
  auto dense = model.forward(in, nullptr).logits;
  auto gated = model.forward(in, &mult).logits;
  for (const auto& [layer, heads] : removed) model.prune_heads(layer, heads, {});
  const auto& c = model.config();
  CATCH_CHECK(c.kept_heads == expect_kept);
  CATCH_CHECK(c.kept_kv_heads() == expect_kv);
  CATCH_CHECK(c.uniform_groups() == expect_uniform);
  for (int64_t l = 0; l < 5; ++l) {
    const auto& a = model.layers[l]->self_attn;
    const int64_t nq = static_cast<int64_t>(expect_kept[l].size());
    const int64_t nkv = static_cast<int64_t>(expect_kv[l].size());
    CATCH_INFO("layer " << l);
    CATCH_CHECK(a->num_heads == nq);
    CATCH_CHECK(a->num_kv_heads == nkv);
    CATCH_CHECK(a->q_proj->weight.sizes().vec() == std::vector<int64_t>{nq * 8, 64});
    CATCH_CHECK(a->k_proj->weight.sizes().vec() == std::vector<int64_t>{nkv * 8, 64});
    CATCH_CHECK(a->v_proj->weight.sizes().vec() == std::vector<int64_t>{nkv * 8, 64});
    CATCH_CHECK(a->o_proj->weight.sizes().vec() == std::vector<int64_t>{64, nq * 8});
  }
  auto pruned = model.forward(in, nullptr).logits;
  const double diff = masked_max_diff(gated, pruned, in.attention_mask);
  CATCH_INFO("gated vs pruned max |diff| = " << diff);
  const double tol = testing::float32_tolerance(c, dense);
  CATCH_CHECK(diff <= tol);
  CATCH_CHECK(masked_max_diff(dense, pruned, in.attention_mask) > 10 * tol);

  // The pruned weights + to_json() config reload to the same model.
  const auto dir = testing::temp_dir("llama-pruned");
  models::save_safetensors(dir / "model.safetensors", models::state_dict(model));
  std::ofstream(dir / "config.json") << c.to_json().dump(2);
  const auto j = c.to_json();
  CATCH_CHECK(!j.contains("pruned_heads"));
  CATCH_CHECK((j.contains("headprune") && j["headprune"].contains("kept_heads")) == !expect_uniform);
  CATCH_CHECK((j.contains("headprune") && j["headprune"].contains("original_head_ids")) == expect_uniform);
  auto reloaded = models::load_checkpoint(dir, torch::kCPU);
  CATCH_CHECK(reloaded.unused_keys.empty());
  CATCH_CHECK(reloaded.model->config().heads_per_layer() == c.heads_per_layer());
  auto again = reloaded.model->forward(in, nullptr).logits;
  CATCH_CHECK(masked_max_diff(again, pruned, in.attention_mask) == 0.0);
  fs::remove_all(dir);
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

CATCH_TEST_CASE("stories260K.bin loads as an 8-query / 4-KV-head LLaMA", "[llama]") {
  auto ckpt = load_stories();
  const auto& c = ckpt.model->config();
  CATCH_CHECK(c.model_type == "llama");
  CATCH_CHECK(c.num_hidden_layers == 5);
  CATCH_CHECK(c.hidden_size == 64);
  CATCH_CHECK(c.num_attention_heads == 8);
  CATCH_CHECK(c.num_key_value_heads == 4);
  CATCH_CHECK(c.head_dim == 8);
  CATCH_CHECK(c.intermediate_size == 172);
  CATCH_CHECK(c.tie_word_embeddings);
  CATCH_CHECK(c.kept_kv_heads() == std::vector<std::vector<int64_t>>(5, {0, 1, 2, 3}));
  CATCH_CHECK(ckpt.unused_keys.empty());
  int64_t n = 0;
  for (const auto& p : ckpt.model->parameters()) n += p.numel();
  // Every float of the file except freq_cis (512 x 4 x 2): (1,056,540 - 28) / 4 - 4,096.
  CATCH_CHECK(n == 260032);
  CATCH_CHECK(ckpt.model->attention_parameter_count() == 5 * (64 * 64 * 2 + 2 * 32 * 64));
}

CATCH_TEST_CASE("greedy decoding from BOS reproduces the documented text", "[llama]") {
  auto ckpt = load_stories();
  models::GenerationOptions options;
  options.steps = 40;
  options.temperature = 0;
  options.stop_tokens = {models::Llama2cTokenizer::kBos, models::Llama2cTokenizer::kEos};
  auto ids = models::generate_tokens(*ckpt.model, {models::Llama2cTokenizer::kBos}, options);
  const auto text = tokenizer().decode(ids);
  CATCH_INFO("generated: " << text);
  CATCH_CHECK(text.substr(0, kGreedyText.size()) == kGreedyText);
}

CATCH_TEST_CASE("the KV cache gives the uncached path's logits and tokens, pruned groups too", "[llama]") {
  auto ckpt = load_stories();
  ckpt.model->prune_heads(1, {0, 3, 4}, {});  // uneven GQA groups: the cache holds KV heads, not query heads
  models::GenerationOptions options;
  options.steps = 120;
  options.temperature = 0;
  const std::vector<int64_t> prompt{models::Llama2cTokenizer::kBos, 403, 261, 378};
  const auto cached = models::generate_tokens(*ckpt.model, prompt, options);
  options.use_cache = false;
  CATCH_CHECK(models::generate_tokens(*ckpt.model, prompt, options) == cached);
  // Two chunks (the second several tokens long, so it is causal among itself and sees the
  // first) against one uncached pass over the whole sequence.
  torch::NoGradGuard no_grad;
  const auto ids = torch::tensor(std::vector<int64_t>(cached.begin(), cached.begin() + 40)).unsqueeze(0);
  models::KvCache cache;
  const auto first = ckpt.model->forward_cached(ids.slice(1, 0, 25), cache);
  const auto second = ckpt.model->forward_cached(ids.slice(1, 25, 40), cache);
  CATCH_CHECK(cache.length == 40);
  const auto full = ckpt.model->forward({ids, {}, {}}, nullptr).logits;
  const auto diff = (torch::cat({first, second}, 1) - full).abs().max().item<double>();
  CATCH_INFO("max |cached - uncached| = " << diff);
  CATCH_CHECK(diff <= testing::float32_tolerance(ckpt.model->config(), full));
}

CATCH_TEST_CASE("logits match HF transformers LlamaForCausalLM", "[llama]") {
  const auto device = testing::test_device();  // scripts/gpu-check runs this on cuda
  auto ckpt = models::load_checkpoint(stories_bin(), device);
  auto ref = models::load_safetensors(testing::fixture_path("stories260K/reference.safetensors"));
  torch::NoGradGuard no_grad;
  auto single = ckpt.model->forward({ref.at("single.input_ids").unsqueeze(0).to(device), {}, {}}, nullptr);
  const double single_diff = (single.logits[0].cpu() - ref.at("single.logits")).abs().max().item<double>();
  CATCH_INFO("single sequence max |diff| = " << single_diff);
  CATCH_CHECK(single_diff <= testing::float32_tolerance(ckpt.model->config(), ref.at("single.logits")));
  const auto mask = ref.at("batch.attention_mask");
  CATCH_REQUIRE(mask.min().item<int64_t>() == 0);  // the batch really is padded
  auto batch = ckpt.model->forward({ref.at("batch.input_ids").to(device), mask.to(device), {}}, nullptr);
  const double batch_diff = masked_max_diff(batch.logits.cpu(), ref.at("batch.logits"), mask);
  CATCH_INFO("padded batch max |diff| = " << batch_diff);
  CATCH_CHECK(batch_diff <= testing::float32_tolerance(ckpt.model->config(), ref.at("batch.logits")));
}

CATCH_TEST_CASE("tok512.bin encodes like SentencePiece and round-trips", "[llama]") {
  auto tok = tokenizer();
  CATCH_CHECK(tok.vocab_size() == 512);
  CATCH_CHECK(token_cases().size() >= 30);
  // run.c's encode keeps every space; SentencePiece (remove_extra_whitespaces) strips leading
  // and trailing spaces and collapses runs. Texts without such spaces match either way.
  int differ = 0;
  for (const auto& c : token_cases()) {
    const auto text = c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int64_t>>();
    CATCH_INFO("text: '" << text << "'");
    tok.set_remove_extra_whitespaces(false);
    const auto run_c = tok.encode(text, false, false);
    CATCH_CHECK(tok.decode(tok.encode(text, true, true)) == text);
    const bool extra_spaces = text.find("  ") != std::string::npos ||
                              (!text.empty() && (text.front() == ' ' || text.back() == ' '));
    if (extra_spaces)
      differ += run_c != expected;
    else
      CATCH_CHECK(run_c == expected);
    tok.set_remove_extra_whitespaces(true);
    CATCH_CHECK(tok.encode(text, false, false) == expected);
  }
  CATCH_CHECK(differ == 4);  // " ", "  two leading spaces", "trailing space ", "double  space ..."
  auto with_specials = tok.encode("hi", true, true);
  CATCH_CHECK(with_specials.front() == 1);
  CATCH_CHECK(with_specials.back() == 2);
  CATCH_CHECK(tok.encode("", false, false).empty());
  CATCH_CHECK_THROWS_AS(tok.decode({512}), Error);
}

CATCH_TEST_CASE("masking == pruning: whole KV groups removed", "[llama]") {
  // Layer 0 loses group 1 (heads 2,3); layer 2 groups 0 and 3; layer 4 every head.
  check_masking_equals_pruning({{0, {2, 3}}, {2, {0, 1, 6, 7}}, {4, {0, 1, 2, 3, 4, 5, 6, 7}}},
                               {{0, 1, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 3, 4, 5},
                                {0, 1, 2, 3, 4, 5, 6, 7}, {}},
                               {{0, 2, 3}, {0, 1, 2, 3}, {1, 2}, {0, 1, 2, 3}, {}}, false);
}

CATCH_TEST_CASE("masking == pruning: the same number of query heads left in every group",
                "[llama]") {
  const std::vector<int64_t> odd = {1, 3, 5, 7}, even = {0, 2, 4, 6};
  check_masking_equals_pruning({{0, odd}, {1, even}, {2, {0, 3, 4, 7}}, {3, odd}, {4, even}},
                               {even, odd, {1, 2, 5, 6}, even, odd},
                               std::vector<std::vector<int64_t>>(5, {0, 1, 2, 3}), true);
}

CATCH_TEST_CASE("masking == pruning: uneven groups", "[llama]") {
  check_masking_equals_pruning({{0, {0}}, {1, {2, 3, 5}}, {3, {7}}},
                               {{1, 2, 3, 4, 5, 6, 7}, {0, 1, 4, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7},
                                {0, 1, 2, 3, 4, 5, 6}, {0, 1, 2, 3, 4, 5, 6, 7}},
                               {{0, 1, 2, 3}, {0, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}},
                               false);
}

CATCH_TEST_CASE("pruning twice uses current local indices and folds fractional scales",
                "[llama]") {
  auto ckpt = load_stories();
  auto& model = as_llama(ckpt);
  const auto in = real_batch();
  torch::NoGradGuard no_grad;
  // Scale all 8 heads of layer 1, dropping original heads 1 and 2.
  auto scale = torch::linspace(0.3, 1.0, 8);
  auto mult = multipliers_for({}, 5, 8);
  mult[1] = scale.clone();
  mult[1][1] = 0.0;
  mult[1][2] = 0.0;
  auto gated = model.forward(in, &mult).logits;
  model.prune_heads(1, {1}, scale);  // now heads 0,2,3,...,7 (local 1 = original 2)
  model.prune_heads(1, {1}, {});
  CATCH_CHECK(model.config().kept_heads[1] == std::vector<int64_t>{0, 3, 4, 5, 6, 7});
  CATCH_CHECK(model.config().kept_kv_heads()[1] == std::vector<int64_t>{0, 1, 2, 3});
  CATCH_CHECK(model.layers[1]->self_attn->kv_of_query == std::vector<int64_t>{0, 1, 2, 2, 3, 3});
  auto pruned = model.forward(in, nullptr).logits;
  // Folding a fractional scale into o_proj reorders float products: within rounding.
  CATCH_CHECK(masked_max_diff(gated, pruned, in.attention_mask) <=
              testing::float32_tolerance(model.config(), gated));
  CATCH_CHECK_THROWS_AS(model.prune_heads(1, {6}, {}), Error);
  CATCH_CHECK_THROWS_AS(model.prune_heads(1, {0, 0}, {}), Error);
  CATCH_CHECK_THROWS_AS(model.prune_heads(5, {0}, {}), Error);
  auto bad = multipliers_for({}, 5, 8);
  CATCH_CHECK_THROWS_AS(model.forward(in, &bad), Error);  // layer 1 now has 6 heads
}

CATCH_TEST_CASE("llama config: HF defaults, headprune.kept_heads and errors", "[llama]") {
  nlohmann::json j = {{"model_type", "llama"},       {"vocab_size", 32},
                      {"hidden_size", 16},           {"num_hidden_layers", 2},
                      {"num_attention_heads", 4},    {"num_key_value_heads", 2},
                      {"intermediate_size", 24}};
  auto c = models::read_config(j, "cfg");
  CATCH_CHECK(c.head_dim == 4);
  CATCH_CHECK(c.hidden_act == "silu");
  CATCH_CHECK(c.rms_norm_eps == 1e-6);
  CATCH_CHECK(c.rope_theta == 10000.0);
  CATCH_CHECK(!c.tie_word_embeddings);
  CATCH_CHECK(c.kv_group_size() == 2);
  j["headprune"] = {{"kept_heads", {{1, 2, 3}, nlohmann::json::array()}}};
  c = models::read_config(j, "cfg");
  CATCH_CHECK(c.heads_per_layer() == std::vector<int64_t>{3, 0});
  CATCH_CHECK(c.kept_kv_heads() == std::vector<std::vector<int64_t>>{{0, 1}, {}});
  CATCH_CHECK(models::read_config(c.to_json(), "again").kept_heads == c.kept_heads);
  auto bad = j;
  bad["headprune"]["kept_heads"] = {{4}, nlohmann::json::array()};
  CATCH_CHECK_THROWS_WITH(models::read_config(bad, "cfg"),
                          Catch::Contains("headprune.kept_heads[0] names head 4"));
  bad["headprune"]["kept_heads"] = nlohmann::json::array({nlohmann::json::array({1})});
  CATCH_CHECK_THROWS_WITH(models::read_config(bad, "cfg"),
                          Catch::Contains("one per layer"));
  bad = j;
  bad["num_key_value_heads"] = 3;
  CATCH_CHECK_THROWS_WITH(models::read_config(bad, "cfg"),
                          Catch::Contains("not a multiple of num_key_value_heads"));
  // A random model with uneven groups runs (empty layer included).
  models::LlamaModel model(c);
  auto out = model.forward({torch::randint(0, 32, {2, 5}), {}, {}}, nullptr);
  CATCH_CHECK(out.logits.sizes().vec() == std::vector<int64_t>{2, 5, 32});
  CATCH_CHECK(model.named_parameters().contains("lm_head.weight"));
  CATCH_CHECK(model.named_parameters().contains("model.layers.1.self_attn.q_proj.weight"));
}

CATCH_TEST_CASE("a truncated .bin or tokenizer is reported with file and sizes", "[llama]") {
  const auto dir = testing::temp_dir("llama-bad");
  const auto bytes = read_file(stories_bin());
  CATCH_REQUIRE(bytes.size() == 1056540);
  const auto cut = dir / "cut.bin";
  std::ofstream(cut, std::ios::binary).write(bytes.data(), 1000000);
  CATCH_CHECK_THROWS_WITH(models::read_llama2c(cut),
                          Catch::Contains(cut.string()) && Catch::Contains("1000000 bytes") &&
                              Catch::Contains("implies 1056540 bytes") &&
                              Catch::Contains("truncated"));
  CATCH_CHECK_THROWS_AS(models::load_checkpoint(cut, torch::kCPU), Error);
  const auto tiny = dir / "tiny.bin";
  std::ofstream(tiny, std::ios::binary).write(bytes.data(), 10);
  CATCH_CHECK_THROWS_WITH(models::read_llama2c(tiny), Catch::Contains("too short"));
  const auto tok_bytes = read_file(stories_tok());
  const auto tok_cut = dir / "tok.bin";
  std::ofstream(tok_cut, std::ios::binary).write(tok_bytes.data(), 3000);
  CATCH_CHECK_THROWS_WITH(models::Llama2cTokenizer::from_file(tok_cut, 512),
                          Catch::Contains(tok_cut.string()) && Catch::Contains("truncated"));
  fs::remove_all(dir);
}

CATCH_TEST_CASE("convert-llama2c and generate on the command line", "[llama]") {
  const auto dir = testing::temp_dir("llama-cli");
  const auto folder = dir / "stories260K";
  auto run = [](std::vector<std::string> args) {
    args.insert(args.begin(), "headprune");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    return cli::run(static_cast<int>(argv.size()), argv.data());
  };
  CATCH_CHECK(run({"generate", "--help"}) == 0);
  CATCH_CHECK(run({"generate", stories_bin().string(), "--steps", "5"}) == 2);  // no tokenizer
  CATCH_CHECK(run({"generate", stories_bin().string(), "--tokenizer", stories_tok().string(),
                   "--temperature", "-1"}) == 2);
  CATCH_CHECK(run({"generate", (dir / "missing").string(), "--tokenizer",
                   stories_tok().string()}) == 1);
  CATCH_REQUIRE(run({"convert-llama2c", stories_bin().string(), "--tokenizer",
                     stories_tok().string(), "--out", folder.string()}) == 0);
  CATCH_CHECK(fs::exists(folder / "config.json"));
  CATCH_CHECK(fs::exists(folder / models::kLlama2cTokenizerFile));
  const auto config = models::read_json_file(folder / "config.json");
  CATCH_CHECK(config["architectures"] == nlohmann::json::array({"LlamaForCausalLM"}));
  CATCH_CHECK(config["num_key_value_heads"] == 4);
  CATCH_CHECK(config["head_dim"] == 8);

  // The folder and the .bin give identical logits.
  auto from_bin = load_stories();
  auto from_folder = models::load_checkpoint(folder, torch::kCPU);
  CATCH_CHECK(from_folder.unused_keys.empty());
  torch::NoGradGuard no_grad;
  const auto in = real_batch();
  CATCH_CHECK(masked_max_diff(from_bin.model->forward(in, nullptr).logits,
                              from_folder.model->forward(in, nullptr).logits,
                              in.attention_mask) == 0.0);

  // The binary prints the documented text, the tokenizer found in the folder.
  const auto out = dir / "out.txt";
  const auto cmd = fmt::format("'{}' generate '{}' --temperature 0 --steps 40 > '{}'",
                               HEADPRUNE_BINARY, folder.string(), out.string());
  CATCH_REQUIRE(std::system(cmd.c_str()) == 0);
  CATCH_CHECK(read_file(out).rfind(kGreedyText, 0) == 0);
  fs::remove_all(dir);
}
