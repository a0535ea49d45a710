// The GGUF writer (models/formats/gguf_writer.h) and LLaMA export (models/llama/
// llama_gguf_export.h), read back with the GGUF reader (models/formats/gguf.h,
// models/llama/llama_gguf.h). llama.cpp itself runs the exported files in
// tools/check_gguf_llama_cpp.py (not part of the C++ tests: it needs a llama.cpp build).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/formats/gguf.h"
#include "models/formats/gguf_writer.h"
#include "models/formats/llama2c.h"
#include "models/gguf_model.h"
#include "models/llama/llama_gguf.h"
#include "models/llama/llama_gguf_export.h"
#include "models/llama/llama_model.h"
#include "models/loader.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

namespace fs = std::filesystem;
using namespace headprune;
using models::GgufExportType;

namespace {

models::Checkpoint tiny_llama() {
  return models::load_checkpoint(testing::fixture_path("gguf/tiny-llama.gguf"), torch::kCPU);
}

torch::Tensor logits_of(models::Checkpoint& ckpt) {
  torch::NoGradGuard no_grad;
  const auto ids = torch::arange(0, 40, torch::kLong).remainder(ckpt.model->config().vocab_size).unsqueeze(0);
  return ckpt.model->forward({ids, {}, {}}, nullptr).logits[0];
}

const models::GgufTensorInfo& info_of(const models::GgufFile& f, const std::string& name) {
  for (const auto& t : f.header.tensors)
    if (t.name == name) return t;
  throw Error("no tensor " + name);
}

/// ggml's dequantize(quantize_row_q8_0_ref(x)) computed here from the formula.
torch::Tensor q8_0_reference(const torch::Tensor& x) {
  const auto blocks = x.reshape({-1, 32});
  const auto d = blocks.abs().amax(1, true) / 127.0f;
  const auto id = torch::where(d != 0, 1.0f / d, torch::zeros_like(d));
  const auto v = blocks * id;
  const auto q = v.sign() * (v.abs() + 0.5f).floor();  // roundf: halves away from zero
  return (q * d.to(torch::kHalf).to(torch::kFloat)).reshape(x.sizes());
}

}  // namespace

CATCH_TEST_CASE("the GGUF writer round-trips metadata and F32, F16 and Q8_0 tensors", "[gguf-export]") {
  torch::manual_seed(3);
  const auto a = torch::randn({3, 5});
  const auto b = torch::randn({4, 64}) * 3;
  const auto c = torch::randn({2, 96});
  models::GgufWriter w;
  w.add("general.architecture", models::gguf_string("llama"));
  w.add("x.count", models::gguf_u32(7));
  w.add("x.eps", models::gguf_f32(1e-5f));
  w.add("x.flag", models::gguf_bool(true));
  w.add("x.names", models::gguf_string_array({"a b", "ĠHello", ""}));
  w.add("x.heads", models::gguf_i32_array({3, 0, -1}));
  w.add("x.scores", models::gguf_f32_array({0.5f, -2.0f}));
  w.add_tensor("a", a, models::GgmlType::F32);
  w.add_tensor("b", b, models::GgmlType::Q8_0);
  w.add_tensor("c", c, models::GgmlType::F16);
  CATCH_CHECK_THROWS_WITH(w.add("x.count", models::gguf_u32(1)), Catch::Contains("'x.count' added twice"));
  CATCH_CHECK_THROWS_WITH(w.add_tensor("d", a, models::GgmlType::Q8_0), Catch::Contains("cannot be Q8_0"));
  const auto file = testing::temp_dir("gguf-writer") / "round.gguf";
  w.write_file(file);
  CATCH_CHECK(w.bytes().size() == fs::file_size(file));
  const auto f = models::read_gguf(file);
  CATCH_CHECK(f.header.version == 3);
  CATCH_CHECK(f.header.find("x.count")->value == 7);
  CATCH_CHECK(f.header.find("x.eps")->value.get<float>() == 1e-5f);
  CATCH_CHECK(f.header.find("x.flag")->value == true);
  CATCH_CHECK(f.header.find("x.names")->value == nlohmann::json({"a b", "ĠHello", ""}));
  CATCH_CHECK(f.header.find("x.heads")->array_type == models::GgufValueType::INT32);
  CATCH_CHECK(f.header.find("x.heads")->value == nlohmann::json({3, 0, -1}));
  CATCH_CHECK(f.header.find("x.scores")->value == nlohmann::json({0.5, -2.0}));
  CATCH_REQUIRE(f.header.tensors.size() == 3);
  CATCH_CHECK(f.header.tensors[1].dimensions == std::vector<int64_t>{64, 4});
  CATCH_CHECK(torch::equal(models::read_gguf_tensor(f, info_of(f, "a")), a));
  CATCH_CHECK(torch::equal(models::read_gguf_tensor(f, info_of(f, "c")), c.to(torch::kHalf)));
  const auto bq = models::read_gguf_tensor(f, info_of(f, "b"));
  CATCH_CHECK(torch::equal(bq, q8_0_reference(b)));
  // The quantisation error is at most half a step per block.
  CATCH_CHECK((bq - b).abs().max().item<double>() <= b.abs().max().item<double>() / 127 * 0.51);
}

CATCH_TEST_CASE("Q8_0 quantisation follows quantize_row_q8_0_ref", "[gguf-export]") {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;    // roundf: 3, not banker's 2
  x[2] = -2.5f;
  const auto bytes = models::quantize_q8_0(x.data(), 32);
  CATCH_REQUIRE(bytes.size() == 34);
  CATCH_CHECK(static_cast<unsigned char>(bytes[0]) == 0x00);  // f16 1.0 = 0x3c00
  CATCH_CHECK(static_cast<unsigned char>(bytes[1]) == 0x3c);
  CATCH_CHECK(static_cast<int8_t>(bytes[2]) == 127);
  CATCH_CHECK(static_cast<int8_t>(bytes[3]) == 3);
  CATCH_CHECK(static_cast<int8_t>(bytes[4]) == -3);
  const std::vector<float> zeros(32, 0.0f);
  CATCH_CHECK(models::quantize_q8_0(zeros.data(), 32) == std::string(34, '\0'));
  CATCH_CHECK_THROWS_WITH(models::quantize_q8_0(zeros.data(), 31), Catch::Contains("whole blocks of 32"));
}

CATCH_TEST_CASE("rotary interleaving is the inverse of permute_rotary_rows", "[gguf-export]") {
  const auto w = torch::randn({3 * 8, 5});
  CATCH_CHECK(torch::equal(models::permute_rotary_rows(models::llama::interleave_rotary_rows(w, 3, 8), 3, 8), w));
}

CATCH_TEST_CASE("llama.cpp's head layout of a layer duplicates K/V heads only for uneven groups", "[gguf-export]") {
  const auto dense = models::llama::llama_cpp_layer_heads({0, 0, 0, 1, 1, 1, 2, 2, 2});
  CATCH_CHECK(dense.n_head == 9);
  CATCH_CHECK(dense.n_head_kv == 3);
  CATCH_CHECK(dense.kv_source == std::vector<int64_t>{0, 1, 2});
  const auto even = models::llama::llama_cpp_layer_heads({0, 0, 1, 1, 2, 2});
  CATCH_CHECK(even.n_head_kv == 3);
  const auto uneven = models::llama::llama_cpp_layer_heads({0, 0, 1});
  CATCH_CHECK(uneven.n_head_kv == 3);
  CATCH_CHECK(uneven.kv_source == std::vector<int64_t>{0, 0, 1});
  const auto blocks = models::llama::llama_cpp_layer_heads({0, 0, 0, 0, 1, 1});
  CATCH_CHECK(blocks.n_head_kv == 3);
  CATCH_CHECK(blocks.kv_source == std::vector<int64_t>{0, 0, 1});
  CATCH_CHECK(models::llama::llama_cpp_layer_heads({}).n_head_kv == 0);
}

CATCH_TEST_CASE("an exported tiny LLaMA reads back with identical weights and logits", "[gguf-export]") {
  auto ckpt = tiny_llama();
  const auto file = testing::temp_dir("gguf-export") / "tiny.gguf";
  const auto written = models::export_gguf(ckpt, file, false, GgufExportType::kF32);
  CATCH_CHECK(written.architecture == "llama");
  CATCH_CHECK_FALSE(written.has_tokenizer);
  const auto back = models::read_gguf_model(file);
  CATCH_CHECK(back.config.num_attention_heads == 4);
  CATCH_CHECK(back.config.num_key_value_heads == 2);
  CATCH_CHECK(back.config.tie_word_embeddings);
  CATCH_CHECK(back.config.rope_theta == 100000.0);
  CATCH_CHECK(back.config.rms_norm_eps == 1e-5);
  const auto original = models::state_dict(*ckpt.model);
  CATCH_CHECK(back.weights.size() == original.size());
  for (const auto& [name, t] : back.weights) {
    CATCH_INFO(name);
    CATCH_CHECK(torch::equal(t, original.at(name)));
  }
  auto reloaded = models::load_checkpoint(file, torch::kCPU);
  CATCH_CHECK(torch::equal(logits_of(reloaded), logits_of(ckpt)));
  CATCH_CHECK_THROWS_WITH(models::export_gguf(ckpt, file, false, GgufExportType::kF32),
                          Catch::Contains("exists; add --force"));
  // F16 and Q8_0: every matrix is the original rounded as llama.cpp's converter rounds it (rows
  // are permuted whole, so Q8_0 blocks hold the same values); norms stay F32.
  for (auto type : {GgufExportType::kF16, GgufExportType::kQ8_0}) {
    models::export_gguf(ckpt, file, true, type);
    const auto lossy = models::read_gguf_model(file);
    for (const auto& [name, t] : lossy.weights) {
      CATCH_INFO(name);
      const auto& o = original.at(name);
      if (o.dim() == 1) CATCH_CHECK(torch::equal(t, o));
      else if (type == GgufExportType::kF16) CATCH_CHECK(torch::equal(t, o.to(torch::kHalf)));
      else CATCH_CHECK(torch::equal(t, q8_0_reference(o)));
    }
  }
}

CATCH_TEST_CASE("a uniformly pruned LLaMA exports as llama with fewer heads and the same logits", "[gguf-export]") {
  auto ckpt = tiny_llama();
  for (int64_t l = 0; l < 2; ++l) ckpt.model->prune_heads(l, {0, 1}, {});  // KV group 0 of each layer
  const auto file = testing::temp_dir("gguf-uniform") / "uniform.gguf";
  const auto written = models::export_gguf(ckpt, file, false, GgufExportType::kF32);
  CATCH_CHECK(written.architecture == "llama");
  CATCH_CHECK(written.warnings.size() == 1);  // no tokenizer in the fixture: llama.cpp cannot run it
  const auto f = models::read_gguf(file);
  CATCH_CHECK(f.header.find("llama.attention.head_count")->value == 2);
  CATCH_CHECK(f.header.find("llama.attention.head_count_kv")->value == 1);
  CATCH_CHECK(f.header.find("llama.attention.key_length")->value == 16);  // 2 × 16 != 64
  auto reloaded = models::load_checkpoint(file, torch::kCPU);
  CATCH_CHECK(reloaded.model->config().num_attention_heads == 2);
  const auto ref = logits_of(ckpt);
  CATCH_CHECK((logits_of(reloaded) - ref).abs().max().item<double>() <=
              testing::float32_tolerance(ckpt.model->config(), ref));
}

CATCH_TEST_CASE("uneven GQA groups are written with duplicated K/V heads", "[gguf-export]") {
  auto ckpt = tiny_llama();
  for (int64_t l = 0; l < 2; ++l) ckpt.model->prune_heads(l, {3}, {});  // heads 0,1 share KV 0; head 2 has KV 1
  const auto written = models::build_gguf(ckpt, GgufExportType::kF32);
  CATCH_CHECK(written.architecture == "llama");
  CATCH_CHECK_FALSE(written.per_layer_heads);
  CATCH_CHECK(written.layers[0].n_head_kv == 3);
  CATCH_CHECK(written.layers[0].kv_source == std::vector<int64_t>{0, 0, 1});
  CATCH_CHECK(written.warnings.size() == 3);  // both layers' copies, and no tokenizer
  CATCH_CHECK_THAT(written.warnings[0], Catch::Contains("layer 0") && Catch::Contains("2 KV heads are written as 3 copies"));
}

CATCH_TEST_CASE("uneven heads per layer export as deci, and a headless layer 0 is refused", "[gguf-export]") {
  auto ckpt = tiny_llama();
  ckpt.model->prune_heads(1, {0, 1, 2, 3}, {});
  const auto written = models::build_gguf(ckpt, GgufExportType::kF32);
  CATCH_CHECK(written.architecture == "deci");
  CATCH_CHECK(written.per_layer_heads);
  const auto file = testing::temp_dir("gguf-deci") / "deci.gguf";
  written.writer.write_file(file);
  const auto f = models::read_gguf(file);
  CATCH_CHECK(f.header.find("deci.attention.head_count")->value == nlohmann::json({4, 0}));
  CATCH_CHECK(f.header.find("deci.attention.head_count_kv")->value == nlohmann::json({2, 0}));
  CATCH_CHECK(f.header.find("deci.attention.key_length")->value == 16);
  for (const auto& t : f.header.tensors) CATCH_CHECK(t.name.rfind("blk.1.attn", 0) != 0);  // no attention in layer 1

  auto headless = tiny_llama();
  headless.model->prune_heads(0, {0, 1, 2, 3}, {});
  CATCH_CHECK_THROWS_WITH(models::build_gguf(headless, GgufExportType::kF32),
                          Catch::Contains("layer 0 has no attention heads left"));
}

CATCH_TEST_CASE("uneven FFN widths export as deci, an emptied FFN as one zero neuron", "[gguf-export][ffn]") {
  auto ckpt = tiny_llama();
  const int64_t width = ckpt.model->config().intermediate_size;
  std::vector<int64_t> all(static_cast<std::size_t>(width));
  for (int64_t i = 0; i < width; ++i) all[static_cast<std::size_t>(i)] = i;
  ckpt.model->prune_ffn(0, {1, 5}, {});
  ckpt.model->prune_ffn(1, all, {});
  const auto written = models::build_gguf(ckpt, GgufExportType::kF32);
  CATCH_CHECK(written.architecture == "deci");
  CATCH_CHECK_FALSE(written.per_layer_heads);
  CATCH_CHECK(written.per_layer_ffn);
  CATCH_CHECK_THAT(written.warnings.at(0), Catch::Contains("layer 1: its emptied FFN is written as one zero neuron"));
  const auto file = testing::temp_dir("gguf-deci-ffn") / "deci.gguf";
  written.writer.write_file(file);
  const auto f = models::read_gguf(file);
  CATCH_CHECK(f.header.find("deci.feed_forward_length")->value == nlohmann::json({width - 2, 1}));
  CATCH_CHECK(f.header.find("deci.attention.head_count")->value == 4);  // heads stay one count
  const int64_t hidden = ckpt.model->config().hidden_size;
  CATCH_CHECK(info_of(f, "blk.0.ffn_down.weight").torch_shape() == std::vector<int64_t>{hidden, width - 2});
  for (const char* part : {"blk.1.ffn_gate.weight", "blk.1.ffn_up.weight", "blk.1.ffn_down.weight"}) {
    const auto t = models::read_gguf_tensor(f, info_of(f, part));  // the zero neuron adds nothing
    CATCH_CHECK(t.numel() == hidden);
    CATCH_CHECK(t.abs().max().item<float>() == 0.0F);
  }
}

CATCH_TEST_CASE("export-gguf refuses what llama.cpp cannot hold, naming the reason", "[gguf-export]") {
  auto bert = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  CATCH_CHECK_THROWS_WITH(models::check_gguf_exportable(bert),
                          Catch::Contains("'bert' model, which has no llama.cpp GGUF mapping") &&
                              Catch::Contains("GGUF export writes: llama"));
  auto tiny = tiny_llama();  // 256 embedding rows, SmolLM2's 49152 tokens
  tiny.tokenizer = std::make_shared<models::BpeTokenizer>(
      models::BpeTokenizer::from_tokenizer_json(testing::fixture_path("smollm2/tokenizer.json")));
  CATCH_CHECK_THROWS_WITH(models::build_gguf(tiny, GgufExportType::kF32),
                          Catch::Contains("has 49152 tokens but the embedding only 256 rows"));
  CATCH_CHECK_THROWS_WITH(models::parse_gguf_export_type("q4_k"), Catch::Contains("use f32, f16 or q8_0"));
}
