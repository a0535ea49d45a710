// The GGUF reader (models/formats/gguf*.h, models/llama/llama_gguf.h) against llama.cpp's own
// `gguf` Python package and transformers' GGUF loading: fixtures from tools/make_gguf_fixtures.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/formats/gguf.h"
#include "models/formats/gguf_writer.h"
#include "models/formats/safetensors.h"
#include "models/gguf_model.h"
#include "models/llama/llama_gguf.h"
#include "models/loader.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

namespace fs = std::filesystem;
using namespace headprune;

namespace {

fs::path gguf_fixture(const std::string& name) { return testing::fixture_path("gguf/" + name); }

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fs::path write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return file;
}

/// Byte position, in a GGUF file's bytes, just after the name of the tensor info of `name`
/// (which has `n_dims` dimensions).
std::size_t tensor_info_end_of_name(const std::string& bytes, const std::string& name, char n_dims) {
  const auto at = bytes.find(name + std::string(1, n_dims) + std::string(3, '\0'));
  CATCH_REQUIRE(at != std::string::npos);
  return at + name.size();
}

/// The byte range [first, second) of the tensor info of `info` in the bytes of a GGUF file whose
/// header is `header`: u64 name length, name, u32 n_dimensions, u64 dimensions, u32 type, u64 offset.
std::pair<std::size_t, std::size_t> tensor_info_bytes(const std::string& bytes, const models::GgufHeader& header,
                                                      const models::GgufTensorInfo& info) {
  std::string key(8, '\0');
  const uint64_t length = info.name.size();
  std::memcpy(key.data(), &length, 8);
  key += info.name;
  const auto at = bytes.rfind(key, header.data_offset);  // tensor infos follow the metadata
  CATCH_REQUIRE(at != std::string::npos);
  return {at, at + key.size() + 4 + 8 * info.dimensions.size() + 4 + 8};
}

void set_u64(std::string& bytes, std::size_t at, uint64_t value) { std::memcpy(bytes.data() + at, &value, 8); }

/// The message read_gguf refuses `file` with ("" if it does not).
std::string gguf_refusal(const fs::path& file) {
  try {
    models::read_gguf(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// tiny-llama.gguf's bytes and header, and a scratch folder, for the tests that edit it.
struct TinyLlamaGguf {
  fs::path dir;
  std::string good = file_bytes(gguf_fixture("tiny-llama.gguf"));
  models::GgufHeader header = models::read_gguf(gguf_fixture("tiny-llama.gguf")).header;
  explicit TinyLlamaGguf(const std::string& tag) : dir(testing::temp_dir(tag)) {}
};

}  // namespace

CATCH_TEST_CASE("every supported ggml type dequantises as llama.cpp's gguf package does", "[gguf]") {
  const auto gguf = models::read_gguf(gguf_fixture("quants.gguf"));
  const auto reference = models::load_safetensors(gguf_fixture("quants_reference.safetensors"));
  CATCH_REQUIRE(gguf.header.tensors.size() == 11);
  for (const auto& info : gguf.header.tensors) {
    CATCH_INFO("type " << info.name);
    CATCH_CHECK(std::string(models::ggml_type_traits(info.type).name) == info.name);
    const auto ours = models::read_gguf_tensor(gguf, info).to(torch::kFloat);
    const auto& ref = reference.at(info.name);
    CATCH_REQUIRE(ours.sizes() == ref.sizes());
    // Each value is a product of at most three float32 roundings (d·sc, ·q, − dmin·m) in an
    // order that may differ from numpy's: a few units of float32 roundoff of the largest value.
    const double tol = 8 * testing::kFloat32UnitRoundoff * ref.abs().max().item<double>();
    CATCH_CHECK((ours - ref).abs().max().item<double>() <= tol);
    CATCH_CHECK(ref.abs().max().item<double>() > 0);
  }
}

CATCH_TEST_CASE("a GGUF LLaMA gives the logits transformers computes from the same file", "[gguf]") {
  const auto file = gguf_fixture("tiny-llama.gguf");
  const auto converted = models::read_gguf_model(file);
  CATCH_CHECK(converted.config.num_attention_heads == 4);
  CATCH_CHECK(converted.config.num_key_value_heads == 2);
  CATCH_CHECK(converted.config.tie_word_embeddings);
  CATCH_CHECK(converted.config.rms_norm_eps == 1e-5);  // float32 9.99999975e-06 read as written
  CATCH_CHECK(converted.source_types.at("model.layers.0.mlp.up_proj.weight") == "Q8_0");
  CATCH_CHECK(converted.source_types.at("model.layers.0.self_attn.q_proj.weight") == "F16");
  auto ckpt = models::load_checkpoint(file, testing::test_device());
  const auto ref = models::load_safetensors(gguf_fixture("tiny-llama_reference.safetensors"));
  torch::NoGradGuard no_grad;
  const auto out = ckpt.model->forward({ref.at("input_ids").unsqueeze(0).to(testing::test_device()), {}, {}}, nullptr);
  const double diff = (out.logits[0].cpu() - ref.at("logits")).abs().max().item<double>();
  CATCH_INFO("max |logit diff| = " << diff);
  CATCH_CHECK(diff <= testing::float32_tolerance(ckpt.model->config(), ref.at("logits")));
}

CATCH_TEST_CASE("bad GGUF files are refused with one line naming the problem", "[gguf]") {
  const auto dir = testing::temp_dir("gguf-bad");
  const auto good = file_bytes(gguf_fixture("tiny-llama.gguf"));
  CATCH_SECTION("truncated") {
    const auto cut = write_bytes(dir / "cut.gguf", good.substr(0, good.size() - 100));
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(cut, torch::kCPU),
                            Catch::Contains(cut.string()) && Catch::Contains("past its end") &&
                                Catch::Contains("truncated"));
    const auto header_only = write_bytes(dir / "header.gguf", good.substr(0, 200));
    CATCH_CHECK_THROWS_WITH(models::read_gguf(header_only), Catch::Contains("truncated"));
  }
  CATCH_SECTION("a tensor offset past the end") {
    auto bytes = good;
    const auto at = tensor_info_end_of_name(bytes, "output_norm.weight", 1) + 4 + 8 + 4;  // n_dims, dim, type
    const uint64_t offset = uint64_t{1} << 40;
    std::memcpy(bytes.data() + at, &offset, 8);
    CATCH_CHECK_THROWS_WITH(models::read_gguf(write_bytes(dir / "offset.gguf", bytes)),
                            Catch::Contains("tensor 'output_norm.weight'") && Catch::Contains("past its end"));
  }
  CATCH_SECTION("an unknown quantisation type") {
    auto bytes = good;
    const auto at = tensor_info_end_of_name(bytes, "output_norm.weight", 1) + 4 + 8;
    const uint32_t type = 99;
    std::memcpy(bytes.data() + at, &type, 4);
    CATCH_CHECK_THROWS_WITH(models::read_gguf(write_bytes(dir / "type.gguf", bytes)),
                            Catch::Contains("unknown ggml type 99"));
  }
  CATCH_SECTION("a known type that cannot be dequantised") {
    auto bytes = file_bytes(gguf_fixture("quants.gguf"));
    const auto at = tensor_info_end_of_name(bytes, "F32", 2) + 4 + 8 + 8;
    // I32 has F32's size: the data section is still tiled (Q4_K -> Q2_K would leave bytes
    // between tensors, which the header check refuses).
    const uint32_t i32 = 26;
    std::memcpy(bytes.data() + at, &i32, 4);
    const auto gguf = models::read_gguf(write_bytes(dir / "i32.gguf", bytes));
    const auto info = std::find_if(gguf.header.tensors.begin(), gguf.header.tensors.end(),
                                   [](const auto& t) { return t.name == "F32"; });
    CATCH_REQUIRE(info != gguf.header.tensors.end());
    CATCH_CHECK_THROWS_WITH(models::read_gguf_tensor(gguf, *info),
                            Catch::Contains("tensor 'F32' has type I32") && Catch::Contains("cannot dequantise"));
  }
  CATCH_SECTION("an architecture that is not LLaMA") {
    auto bytes = good;
    const auto at = bytes.find("llama");
    CATCH_REQUIRE(at != std::string::npos);
    bytes.replace(at, 5, "bloom");  // a llama.cpp architecture no family maps
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(write_bytes(dir / "arch.gguf", bytes), torch::kCPU),
                            Catch::Contains("architecture 'bloom' is not supported") &&
                                Catch::Contains("supported: llama"));
  }
  CATCH_SECTION("not GGUF at all") {
    CATCH_CHECK_THROWS_WITH(models::read_gguf(write_bytes(dir / "text.gguf", "hello world, not a model")),
                            Catch::Contains("magic 'GGUF'"));
  }
  fs::remove_all(dir);
}

// Issue 51: with one tensor info fewer (removed, or only tensor_count decremented) the data
// section starts earlier, every tensor was read from shifted bytes and a missing output.weight
// became the tied embedding; the header check now requires the tensors to tile the data.
CATCH_TEST_CASE("a GGUF whose tensor-info table lists a tensor fewer than its data is refused", "[gguf]") {
  const TinyLlamaGguf g("gguf-fewer");
  CATCH_REQUIRE(g.header.tensors.size() >= 2);
  const auto last = tensor_info_bytes(g.good, g.header, g.header.tensors.back());
  CATCH_REQUIRE(last.second <= g.header.data_offset);
  CATCH_REQUIRE(g.header.data_offset - last.second < g.header.alignment);  // the table's last entry
  const auto refused = [&](const fs::path& file) {
    CATCH_CHECK(testing::run_cli({"inspect", file.string()}) == 1);
    const auto message = gguf_refusal(file);
    CATCH_INFO(message);
    CATCH_CHECK_THAT(message, Catch::StartsWith("GGUF file '" + file.string() + "'") &&
                                  Catch::Contains("belong to no tensor") &&
                                  Catch::Contains("the tensor-info table lists fewer tensors than the file holds"));
    CATCH_CHECK(message.find('\n') == std::string::npos);
    CATCH_CHECK_THROWS_AS(models::load_checkpoint(file, torch::kCPU), Error);
  };
  CATCH_SECTION("the last tensor info removed and tensor_count decremented") {
    auto bytes = g.good;
    bytes.erase(last.first, last.second - last.first);
    set_u64(bytes, 8, g.header.tensors.size() - 1);  // after "GGUF" and the u32 version
    refused(write_bytes(g.dir / "removed.gguf", bytes));
  }
  CATCH_SECTION("tensor_count decremented only") {
    auto bytes = g.good;
    set_u64(bytes, 8, g.header.tensors.size() - 1);
    refused(write_bytes(g.dir / "count.gguf", bytes));
  }
  fs::remove_all(g.dir);
}

CATCH_TEST_CASE("a GGUF with bytes no tensor claims, after the last tensor or between two, is refused", "[gguf]") {
  const TinyLlamaGguf g("gguf-untiled");
  const auto a = static_cast<std::size_t>(g.header.alignment);
  CATCH_REQUIRE(g.header.data_offset + g.header.tensors.back().offset + g.header.tensors.back().n_bytes == g.good.size());
  CATCH_SECTION("padding after the last tensor is fine, the alignment or more is not") {
    const auto padded = write_bytes(g.dir / "padded.gguf", g.good + std::string(a - 1, '\0'));
    CATCH_CHECK(gguf_refusal(padded).empty());
    CATCH_CHECK(testing::run_cli({"inspect", padded.string()}) == 0);
    const auto garbage = write_bytes(g.dir / "garbage.gguf", g.good + std::string(a, '\x55'));
    CATCH_CHECK(testing::run_cli({"inspect", garbage.string()}) == 1);
    CATCH_CHECK_THAT(gguf_refusal(garbage),
                     Catch::Contains(fmt::format("{} bytes of the data section after tensor 'output_norm.weight'", a)) &&
                         Catch::Contains("belong to no tensor") && Catch::Contains("fewer tensors than the file holds"));
    CATCH_CHECK_THROWS_AS(models::load_checkpoint(garbage, torch::kCPU), Error);
  }
  CATCH_SECTION("a gap between two tensors") {
    // The last tensor (output_norm.weight, last in the data too) moved one alignment later,
    // the file grown to hold it: in bounds, aligned, no overlap, but a gap before it.
    auto bytes = g.good + std::string(a, '\0');
    const auto& moved = g.header.tensors.back();
    set_u64(bytes, tensor_info_bytes(g.good, g.header, moved).second - 8, moved.offset + a);
    const auto file = write_bytes(g.dir / "gap.gguf", bytes);
    CATCH_CHECK(testing::run_cli({"inspect", file.string()}) == 1);
    CATCH_CHECK_THAT(gguf_refusal(file),
                     Catch::Contains(fmt::format("{} bytes of the data section between tensor 'blk.1.ffn_norm.weight'", a)) &&
                         Catch::Contains("and tensor 'output_norm.weight' (offset " + std::to_string(moved.offset + a)) &&
                         Catch::Contains("belong to no tensor"));
  }
  CATCH_SECTION("a gap before the first tensor") {
    auto bytes = g.good + std::string(a, '\0');
    for (const auto& t : g.header.tensors) set_u64(bytes, tensor_info_bytes(g.good, g.header, t).second - 8, t.offset + a);
    const auto file = write_bytes(g.dir / "first.gguf", bytes);
    CATCH_CHECK(testing::run_cli({"inspect", file.string()}) == 1);
    CATCH_CHECK_THAT(gguf_refusal(file), Catch::Contains(fmt::format("the data section's first {} bytes", a)) &&
                                             Catch::Contains("the first tensor, 'token_embd.weight', starts at offset"));
  }
  fs::remove_all(g.dir);
}

CATCH_TEST_CASE("the command line refuses a bad GGUF with exit 1", "[gguf]") {
  const auto dir = testing::temp_dir("gguf-cli");
  const auto good = file_bytes(gguf_fixture("tiny-llama.gguf"));
  const auto cut = write_bytes(dir / "cut.gguf", good.substr(0, good.size() / 2));
  CATCH_CHECK(testing::run_cli({"inspect", cut.string()}) == 1);
  CATCH_CHECK(testing::run_cli({"convert-gguf", cut.string(), "--out", (dir / "out").string()}) == 1);
  CATCH_CHECK_FALSE(fs::exists(dir / "out"));  // nothing half-written
  // A SentencePiece vocabulary (tokenizer.ggml.model "llama") is not read yet: the model loads
  // without a tokenizer, and what needs text refuses, naming the file and the vocabulary.
  const auto gguf = models::read_gguf(gguf_fixture("tiny-llama.gguf"));
  models::GgufWriter writer;
  for (const auto& [key, value] : gguf.header.metadata)
    if (key != "general.alignment") writer.add(key, value);
  writer.add("tokenizer.ggml.model", models::gguf_string("llama"));
  writer.add("tokenizer.ggml.tokens", models::gguf_string_array({"<unk>", "<s>", "</s>"}));
  for (const auto& info : gguf.header.tensors) {
    auto t = models::read_gguf_tensor(gguf, info);
    writer.add_tensor(info.name, t.to(torch::kFloat), models::GgmlType::F32);
  }
  const auto spm = dir / "spm.gguf";
  writer.write_file(spm);
  CATCH_CHECK_FALSE(models::load_checkpoint(spm, torch::kCPU).tokenizer);
  CATCH_CHECK_THROWS_WITH(models::require_tokenizer_files(spm, "generate"),
                          Catch::Contains("'llama'") && Catch::Contains(spm.string()) && Catch::Contains("generate needs"));
  CATCH_CHECK(testing::run_cli({"inspect", spm.string()}) == 0);
  CATCH_CHECK(testing::run_cli({"generate", spm.string(), "--prompt", "Once"}) == 1);
  fs::remove_all(dir);
}
