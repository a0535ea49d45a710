// Tests of models/safetensors: round trips, the exact byte layout, every validation error,
// the real all-MiniLM-L6-v2 checkpoint, sharded checkpoints and a file written by the
// reference Python writer (tests/fixtures/safetensors, made by tools/make_safetensors_fixture.py).
#include "models/formats/safetensors.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <c10/core/InferenceMode.h>
#include <torch/types.h>

#include "models/errors.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using headprune::models::load_checkpoint_weights;
using headprune::models::load_safetensors;
using headprune::models::save_safetensors;
using headprune::models::TensorMap;
using Catch::Matchers::Contains;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CATCH_REQUIRE(out.good());
}

std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i, n >>= 8) s[i] = static_cast<char>(n & 0xff);
  return s;
}

/// A safetensors file from its parts: length prefix (the header's own length unless given),
/// header text, data bytes.
std::string raw_file(const std::string& header, const std::string& data,
                     std::uint64_t length = UINT64_MAX) {
  return le64(length == UINT64_MAX ? header.size() : length) + header + data;
}

/// The message of the headprune::Error that `fn` throws; fails the test if it throws nothing
/// or something else.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const headprune::UsageError& e) {
    CATCH_FAIL("threw UsageError instead of Error: " << e.what());
  } catch (const headprune::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    CATCH_FAIL("threw a non-headprune exception: " << e.what());
  }
  CATCH_FAIL("threw nothing");
  return {};
}

/// Same dtype, same shape and the same bytes (NaN payloads and -0.0 included).
bool bits_equal(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  auto ca = a.contiguous(), cb = b.contiguous();
  const auto n = static_cast<std::size_t>(ca.numel() * ca.element_size());
  return n == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), n) == 0;
}

/// Random bit patterns of `type` (itemsize 1, 2, 4 or 8), every pattern allowed.
torch::Tensor random_bits(torch::IntArrayRef shape, torch::ScalarType type) {
  static const std::map<std::size_t, torch::ScalarType> by_size = {
      {1, torch::kUInt8}, {2, torch::kInt16}, {4, torch::kInt32}, {8, torch::kInt64}};
  const auto carrier = by_size.at(c10::elementSize(type));
  auto opts = torch::TensorOptions().dtype(torch::kInt64);
  auto bits = torch::randint(-(int64_t(1) << 62), int64_t(1) << 62, shape, opts).to(carrier);
  return bits.view(type);
}

}  // namespace

CATCH_TEST_CASE("safetensors round trip keeps every dtype bit-exactly", "[safetensors]") {
  torch::manual_seed(7);
  const auto dir = headprune::testing::temp_dir("st-roundtrip");
  TensorMap tensors;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto f64 = torch::tensor({0.0, -0.0, 1.0 / 3, inf, -inf, nan, 4.9e-324, 1.7976931348623157e308},
                           torch::kFloat64);
  tensors["f64"] = f64;
  tensors["f32"] = f64.to(torch::kFloat32).reshape({2, 4});
  tensors["f16"] = random_bits({3, 5}, torch::kFloat16);   // NaN payloads, subnormals, ...
  tensors["bf16"] = random_bits({5, 3}, torch::kBFloat16);
  tensors["i64"] = torch::tensor({INT64_MIN, int64_t(-1), int64_t(0), INT64_MAX}, torch::kInt64);
  tensors["i32"] = random_bits({7}, torch::kInt32);
  tensors["i16"] = random_bits({2, 2, 2}, torch::kInt16);
  tensors["i8"] = random_bits({9}, torch::kInt8);
  tensors["u8"] = torch::arange(256, torch::kInt64).to(torch::kUInt8).reshape({16, 16});
  tensors["bool"] = torch::tensor({true, false, false, true, true}, torch::kBool);
  tensors["scalar_f32"] = torch::tensor(2.5f);  // 0-dim
  tensors["scalar_bool"] = torch::tensor(true);
  tensors["empty_f32"] = torch::empty({0, 384}, torch::kFloat32);
  tensors["empty_bf16"] = torch::empty({3, 0, 2}, torch::kBFloat16);
  tensors["empty_1d"] = torch::empty({0}, torch::kInt64);
  tensors["transposed"] = torch::arange(12, torch::kFloat32).reshape({3, 4}).t();  // non-contiguous
  tensors["a name with spaces / slashes and ünïcödé"] = torch::ones({1}, torch::kInt16);

  const auto file = dir / "all.safetensors";
  save_safetensors(file, tensors);
  std::map<std::string, std::string> meta{{"stale", "value"}};
  const TensorMap back = load_safetensors(file, &meta);
  CATCH_CHECK(meta.empty());  // replaced, not merged
  CATCH_REQUIRE(back.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    CATCH_INFO("tensor " << name);
    CATCH_REQUIRE(back.count(name) == 1);
    const auto& b = back.at(name);
    CATCH_CHECK(bits_equal(t, b));
    CATCH_CHECK(b.device().is_cpu());
    CATCH_CHECK(b.is_contiguous());
    CATCH_CHECK(!b.requires_grad());
  }
  CATCH_CHECK(back.at("scalar_f32").dim() == 0);
  CATCH_CHECK(back.at("transposed").sizes() == torch::IntArrayRef({4, 3}));
  CATCH_CHECK(back.at("transposed")[1][2].item<float>() == 9.0f);

  CATCH_SECTION("the loaded tensors own writable memory") {
    auto t = back.at("f32");
    t.add_(1);
    t.fill_(0);
    CATCH_CHECK(t.sum().item<float>() == 0.0f);
  }
  CATCH_SECTION("loading under InferenceMode still gives normal tensors") {
    c10::InferenceMode guard;
    const TensorMap again = load_safetensors(file);
    CATCH_CHECK(!again.at("f32").is_inference());
  }
  CATCH_SECTION("an empty map round-trips") {
    save_safetensors(dir / "none.safetensors", {});
    CATCH_CHECK(read_all(dir / "none.safetensors") == le64(8) + "{}      ");
    CATCH_CHECK(load_safetensors(dir / "none.safetensors").empty());
  }
  fs::remove_all(dir);
}

CATCH_TEST_CASE("safetensors metadata round trip", "[safetensors]") {
  const auto dir = headprune::testing::temp_dir("st-meta");
  const std::map<std::string, std::string> meta{
      {"format", "pt"}, {"pruned_heads", "{\"0\": [1, 2]}"}, {"empty", ""}, {"ünï", "\"quoted\"\n"}};
  save_safetensors(dir / "m.safetensors", {{"w", torch::ones({2})}}, meta);
  std::map<std::string, std::string> back;
  const auto tensors = load_safetensors(dir / "m.safetensors", &back);
  CATCH_CHECK(back == meta);
  CATCH_CHECK(tensors.size() == 1);
  fs::remove_all(dir);
}

CATCH_TEST_CASE("safetensors writer produces the exact byte layout", "[safetensors]") {
  const auto dir = headprune::testing::temp_dir("st-layout");
  const auto file = dir / "tiny.safetensors";
  // Keys out of order on purpose: the writer sorts them, after __metadata__.
  TensorMap tensors;
  tensors["b"] = torch::tensor({1.0f, -2.0f});
  tensors["a"] = torch::tensor(int8_t(5), torch::kInt8);
  save_safetensors(file, tensors, {{"k", "v"}});

  // 130 bytes of JSON, padded with 6 spaces to 136 = 17 * 8.
  const std::string header =
      "{\"__metadata__\":{\"k\":\"v\"},"
      "\"a\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[0,1]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]}}"
      "      ";
  CATCH_REQUIRE(header.size() == 136);
  const std::string length("\x88\0\0\0\0\0\0\0", 8);  // 136, little-endian
  const std::string data("\x05" "\x00\x00\x80\x3f" "\x00\x00\x00\xc0", 9);  // 5, 1.0f, -2.0f
  const std::string bytes = read_all(file);
  CATCH_CHECK(bytes.size() == 8 + 136 + 9);
  CATCH_CHECK(bytes.substr(0, 8) == length);
  CATCH_CHECK(bytes.substr(8, 136) == header);
  CATCH_CHECK(bytes.substr(144) == data);

  CATCH_SECTION("no metadata: no __metadata__ key, header still a multiple of 8") {
    save_safetensors(file, {{"x", torch::zeros({1}, torch::kInt16)}});
    const std::string h = "{\"x\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[0,2]}}";
    CATCH_REQUIRE(h.size() == 54);
    CATCH_CHECK(read_all(file) == le64(56) + h + "  " + std::string(2, '\0'));
  }
  fs::remove_all(dir);
}

CATCH_TEST_CASE("safetensors writer errors", "[safetensors]") {
  const auto dir = headprune::testing::temp_dir("st-write-errors");
  const auto file = dir / "out.safetensors";
  auto msg = error_of([&] {
    save_safetensors(file, {{"ok", torch::ones({1})}, {"cplx", torch::ones({2}, torch::kComplexFloat)}});
  });
  CATCH_CHECK_THAT(msg, Contains("cplx") && Contains("BF16") && Contains(file.string()));
  CATCH_CHECK(!fs::exists(file));  // nothing written on a bad tensor

  msg = error_of([&] { save_safetensors(file, {{"__metadata__", torch::ones({1})}}); });
  CATCH_CHECK_THAT(msg, Contains("__metadata__") && Contains("reserved"));

  msg = error_of([&] { save_safetensors(file, {{"u", torch::Tensor()}}); });
  CATCH_CHECK_THAT(msg, Contains("'u'") && Contains("undefined"));

  const auto missing = dir / "no-such-folder" / "out.safetensors";
  msg = error_of([&] { save_safetensors(missing, {{"w", torch::ones({1})}}); });
  CATCH_CHECK_THAT(msg, Contains(missing.string()) && Contains("cannot open"));
  fs::remove_all(dir);
}

CATCH_TEST_CASE("safetensors reader rejects corrupt files", "[safetensors]") {
  const auto dir = headprune::testing::temp_dir("st-corrupt");
  const auto file = dir / "bad.safetensors";
  const std::string f = file.string();
  const auto load_error = [&](const std::string& bytes) {
    write_all(file, bytes);
    return error_of([&] { load_safetensors(file); });
  };
  // A valid 8-byte F32 entry to embed in otherwise broken headers.
  const std::string eight(8, '\0');

  CATCH_SECTION("missing file") {
    auto msg = error_of([&] { load_safetensors(dir / "absent.safetensors"); });
    CATCH_CHECK_THAT(msg, Contains("absent.safetensors") && Contains("no such file"));
  }
  CATCH_SECTION("shorter than 8 bytes") {
    CATCH_CHECK_THAT(load_error("abc"), Contains(f) && Contains("3 bytes long") &&
                                            Contains("truncated"));
    CATCH_CHECK_THAT(load_error(""), Contains(f) && Contains("0 bytes long"));
  }
  CATCH_SECTION("header length beyond the file") {
    CATCH_CHECK_THAT(load_error(raw_file("{}", "", 1000)),
                     Contains(f) && Contains("header length 1000") && Contains("exceeds the 2 bytes") &&
                         Contains("truncated"));
  }
  CATCH_SECTION("absurd header length") {
    CATCH_CHECK_THAT(load_error(raw_file("{}", "", std::uint64_t(1) << 40)),
                     Contains(f) && Contains("absurd"));
    CATCH_CHECK_THAT(load_error(raw_file("{}", "", UINT64_MAX - 1)), Contains("absurd"));
  }
  CATCH_SECTION("header not JSON") {
    CATCH_CHECK_THAT(load_error(raw_file("{\"a\": {", "")),
                     Contains(f) && Contains("not valid JSON"));
    CATCH_CHECK_THAT(load_error(raw_file("", "")), Contains("does not start with '{'"));
  }
  CATCH_SECTION("header not an object") {
    CATCH_CHECK_THAT(load_error(raw_file("[1, 2]    ", "")),
                     Contains(f) && Contains("does not start with '{'"));
  }
  CATCH_SECTION("the format's own rules: '{' first, each name once, every data byte indexed") {
    CATCH_CHECK_THAT(load_error(raw_file(R"(  {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", eight)),
                     Contains(f) && Contains("does not start with '{'"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                                         R"( "w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                                         std::string(12, '\0'))),
                     Contains(f) && Contains("names 'w' twice"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "dtype": "I32", "shape": [2], "data_offsets": [0, 8]}})", eight)),
                     Contains("names 'dtype' twice"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                                         R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                                         std::string(12, '\0'))),
                     Contains("tensor 'b'") && Contains("hole"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", eight)),
                     Contains(f) && Contains("4 bytes after the last tensor"));
  }
  CATCH_SECTION("__metadata__ not str -> str") {
    CATCH_CHECK_THAT(load_error(raw_file(R"({"__metadata__": {"format": 1}})", "")),
                     Contains(f) && Contains("__metadata__") && Contains("format") &&
                         Contains("not a string"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"__metadata__": ["pt"]})", "")),
                     Contains("__metadata__") && Contains("not an object"));
  }
  CATCH_SECTION("entry missing a field") {
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", eight)),
                     Contains(f) && Contains("tensor 'w'") && Contains("no \"dtype\""));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})", eight)),
                     Contains("tensor 'w'") && Contains("no \"shape\""));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "shape": [2]}})", eight)),
                     Contains("tensor 'w'") && Contains("no \"data_offsets\""));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": [1, 2]})", eight)),
                     Contains("tensor 'w'") && Contains("not an object"));
  }
  CATCH_SECTION("unknown dtype") {
    auto msg = load_error(
        raw_file(R"({"w": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}})", eight));
    CATCH_CHECK_THAT(msg, Contains(f) && Contains("tensor 'w'") && Contains("F8_E4M3") &&
                              Contains("F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": 4, "shape": [2], "data_offsets": [0, 8]}})", eight)),
                     Contains("tensor 'w'") && Contains("\"dtype\" is not a string"));
  }
  CATCH_SECTION("bad shape") {
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", eight)),
                     Contains(f) && Contains("tensor 'w'") && Contains("[-2]") &&
                         Contains("non-negative integer"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}})", eight)),
                     Contains("tensor 'w'") && Contains("non-negative integer"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}})", eight)),
                     Contains("tensor 'w'") && Contains("not an array"));
    CATCH_CHECK_THAT(
        load_error(raw_file(
            R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", eight)),
        Contains("tensor 'w'") && Contains("too large"));
  }
  CATCH_SECTION("bad data_offsets") {
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [8, 4]}})", eight)),
                     Contains(f) && Contains("tensor 'w'") && Contains("BEGIN > END"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "U8", "shape": [8], "data_offsets": [0]}})", eight)),
                     Contains("tensor 'w'") && Contains("[BEGIN, END]"));
    CATCH_CHECK_THAT(load_error(raw_file(R"({"w": {"dtype": "U8", "shape": [8], "data_offsets": [-1, 7]}})", eight)),
                     Contains("tensor 'w'") && Contains("[BEGIN, END]"));
  }
  CATCH_SECTION("end beyond the data section") {
    auto msg = load_error(
        raw_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", eight));
    CATCH_CHECK_THAT(msg, Contains(f) && Contains("tensor 'w'") && Contains("beyond the data section") &&
                              Contains("only 8 bytes") && Contains("re-download or re-export"));
  }
  CATCH_SECTION("shape x itemsize != END - BEGIN") {
    auto msg = load_error(
        raw_file(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", eight));
    CATCH_CHECK_THAT(msg, Contains(f) && Contains("tensor 'w'") && Contains("needs 12 bytes") &&
                              Contains("span 8"));
  }
  CATCH_SECTION("overlapping tensors") {
    const std::string header =
        R"({"late": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},)"
        R"( "early": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
    auto msg = load_error(raw_file(header, std::string(12, '\0')));
    CATCH_CHECK_THAT(msg, Contains(f) && Contains("tensor 'late'") && Contains("overlap") &&
                              Contains("'early'"));
    // A zero-size tensor anywhere inside another one overlaps nothing.
    const std::string ok =
        R"({"z": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]},)"
        R"( "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
    write_all(file, raw_file(ok, eight));
    CATCH_CHECK(load_safetensors(file).size() == 2);
  }
  CATCH_SECTION("truncated file") {
    save_safetensors(file, {{"a", torch::ones({4})}, {"b", torch::ones({100})}});
    fs::resize_file(file, fs::file_size(file) - 1);
    auto msg = error_of([&] { load_safetensors(file); });
    CATCH_CHECK_THAT(msg, Contains(f) && Contains("tensor 'b'") &&
                              Contains("the file is truncated: re-download or re-export it"));
  }
  CATCH_SECTION("BOOL bytes other than 0 and 1") {
    auto msg = load_error(raw_file(R"({"m": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}})",
                                   std::string("\x01\x07", 2)));
    CATCH_CHECK_THAT(msg, Contains("tensor 'm'") && Contains("byte value 7"));
  }
  CATCH_SECTION("tolerated: unsorted entries, trailing spaces, unpadded header") {
    const std::string header =
        R"({"b": {"dtype": "I8", "shape": [1], "data_offsets": [1, 2]},)"
        R"( "a": {"dtype": "I8", "shape": [], "data_offsets": [0, 1]}}   )";
    write_all(file, raw_file(header, "\x03\x04"));
    auto t = load_safetensors(file);
    CATCH_CHECK(t.at("a").item<int8_t>() == 3);
    CATCH_CHECK(t.at("b")[0].item<int8_t>() == 4);
  }
  fs::remove_all(dir);
}

CATCH_TEST_CASE("safetensors reads the real all-MiniLM-L6-v2 checkpoint", "[safetensors]") {
  const auto dir = headprune::testing::minilm_dir();
  std::map<std::string, std::string> meta;
  const TensorMap w = load_safetensors(dir / "model.safetensors", &meta);
  // Counted from the header with Python's json module: 103 F32 tensors and position_ids (I64).
  CATCH_CHECK(w.size() == 104);
  CATCH_CHECK(meta == std::map<std::string, std::string>{{"format", "pt"}});
  int f32 = 0;
  for (const auto& [name, t] : w) f32 += t.scalar_type() == torch::kFloat32;
  CATCH_CHECK(f32 == 103);

  const std::map<std::string, std::vector<int64_t>> shapes = {
      {"embeddings.word_embeddings.weight", {30522, 384}},
      {"embeddings.position_embeddings.weight", {512, 384}},
      {"embeddings.token_type_embeddings.weight", {2, 384}},
      {"embeddings.LayerNorm.weight", {384}},
      {"encoder.layer.0.attention.self.query.weight", {384, 384}},
      {"encoder.layer.0.attention.self.key.bias", {384}},
      {"encoder.layer.0.attention.output.dense.weight", {384, 384}},
      {"encoder.layer.5.intermediate.dense.weight", {1536, 384}},
      {"encoder.layer.5.output.dense.weight", {384, 1536}},
      {"pooler.dense.weight", {384, 384}},
  };
  for (const auto& [name, shape] : shapes) {
    CATCH_INFO("tensor " << name);
    CATCH_REQUIRE(w.count(name) == 1);
    CATCH_CHECK(w.at(name).sizes() == torch::IntArrayRef(shape));
    CATCH_CHECK(w.at(name).scalar_type() == torch::kFloat32);
  }
  for (int layer = 0; layer < 6; ++layer)
    CATCH_CHECK(w.count("encoder.layer." + std::to_string(layer) + ".attention.self.value.weight"));

  // Values, read independently with Python's struct module.
  const auto& pos = w.at("embeddings.position_ids");
  CATCH_CHECK(pos.scalar_type() == torch::kInt64);
  CATCH_CHECK(torch::equal(pos, torch::arange(512, torch::kInt64).unsqueeze(0)));
  const auto words = w.at("embeddings.word_embeddings.weight");
  CATCH_CHECK(words[0][0].item<float>() == -0.019989013671875f);
  CATCH_CHECK(words[0][3].item<float>() == 0.0117034912109375f);
  const auto ln = w.at("encoder.layer.5.output.LayerNorm.bias");
  CATCH_CHECK(ln[383].item<float>() == 0.06612399220466614f);
  CATCH_CHECK(ln[382].item<float>() == -0.05801299959421158f);

  CATCH_SECTION("load_checkpoint_weights finds model.safetensors") {
    const TensorMap again = load_checkpoint_weights(dir);
    CATCH_CHECK(again.size() == 104);
    CATCH_CHECK(torch::equal(again.at("pooler.dense.weight"), w.at("pooler.dense.weight")));
  }
  CATCH_SECTION("a save / load round trip of the whole model is exact") {
    const auto tmp = headprune::testing::temp_dir("st-minilm");
    save_safetensors(tmp / "model.safetensors", w, meta);
    std::map<std::string, std::string> meta2;
    const TensorMap back = load_safetensors(tmp / "model.safetensors", &meta2);
    CATCH_CHECK(meta2 == meta);
    CATCH_REQUIRE(back.size() == w.size());
    for (const auto& [name, t] : w) {
      CATCH_INFO("tensor " << name);
      CATCH_CHECK(bits_equal(t, back.at(name)));
    }
    fs::remove_all(tmp);
  }
}

CATCH_TEST_CASE("safetensors reads a file written by the Python safetensors package", "[safetensors]") {
  // Made by tools/make_safetensors_fixture.py; the writer orders entries by alignment.
  std::map<std::string, std::string> meta;
  const auto t = load_safetensors(
      headprune::testing::fixture_path("safetensors/python_written.safetensors"), &meta);
  CATCH_CHECK(meta == std::map<std::string, std::string>{
                          {"format", "np"}, {"made_by", "tools/make_safetensors_fixture.py"}});
  CATCH_REQUIRE(t.size() == 6);
  CATCH_CHECK(bits_equal(t.at("f32"), torch::tensor({1.5f, -2.0f, 0.0f, 3.25f, -0.0f, 1e-3f}).reshape({2, 3})));
  CATCH_CHECK(bits_equal(t.at("f16"),
                         torch::tensor({int16_t(0x3800), int16_t(0xBC00), int16_t(0x7BFF), int16_t(0x03FF)},
                                       torch::kInt16)
                             .view(torch::kFloat16)));
  CATCH_CHECK(bits_equal(t.at("i64"), torch::tensor({INT64_MIN, INT64_MAX, int64_t(0), int64_t(42)})));
  CATCH_CHECK(bits_equal(t.at("mask"), torch::tensor({true, false, false, true}).reshape({2, 2})));
  CATCH_CHECK(t.at("scalar").dim() == 0);
  CATCH_CHECK(t.at("scalar").item<float>() == 7.0f);
  CATCH_CHECK(t.at("empty").sizes() == torch::IntArrayRef({0, 4}));
}

CATCH_TEST_CASE("safetensors sharded checkpoints", "[safetensors]") {
  const auto dir = headprune::testing::temp_dir("st-sharded");
  TensorMap one{{"a.weight", torch::randn({3, 4})}, {"a.bias", torch::randn({3})}};
  TensorMap two{{"b.weight", torch::randn({2, 2}).to(torch::kBFloat16)},
                {"b.ids", torch::arange(5, torch::kInt64)}};
  const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  save_safetensors(dir / s1, one);
  save_safetensors(dir / s2, two);
  const auto index = dir / "model.safetensors.index.json";
  const auto write_index = [&](const std::string& weight_map) {
    write_all(index, R"({"metadata": {"total_size": 100}, "weight_map": {)" + weight_map + "}}");
  };
  const std::string good = R"("a.weight": ")" + s1 + R"(", "a.bias": ")" + s1 + R"(", "b.weight": ")" +
                           s2 + R"(", "b.ids": ")" + s2 + "\"";
  write_index(good);

  CATCH_SECTION("all tensors of all shards are loaded") {
    const TensorMap all = load_checkpoint_weights(dir);
    CATCH_REQUIRE(all.size() == 4);
    for (const TensorMap* part : {&one, &two})
      for (const auto& [name, t] : *part) {
        CATCH_INFO("tensor " << name);
        CATCH_CHECK(bits_equal(all.at(name), t));
      }
  }
  CATCH_SECTION("model.safetensors wins over the index") {
    save_safetensors(dir / "model.safetensors", {{"only", torch::ones({1})}});
    CATCH_CHECK(load_checkpoint_weights(dir).count("only") == 1);
  }
  CATCH_SECTION("a missing shard is an error naming it") {
    fs::remove(dir / s2);
    auto msg = error_of([&] { load_checkpoint_weights(dir); });
    CATCH_CHECK_THAT(msg, Contains(s2) && Contains("does not exist") && Contains(index.string()));
  }
  CATCH_SECTION("an index naming a tensor its shard lacks is an error") {
    write_index(good + R"(, "c.weight": ")" + s1 + "\"");
    auto msg = error_of([&] { load_checkpoint_weights(dir); });
    CATCH_CHECK_THAT(msg, Contains("'c.weight'") && Contains(s1) && Contains("does not hold it"));
  }
  CATCH_SECTION("a tensor listed for the wrong shard is an error") {
    write_index(R"("a.weight": ")" + s1 + R"(", "a.bias": ")" + s2 + R"(", "b.weight": ")" + s2 +
                R"(", "b.ids": ")" + s2 + "\"");
    auto msg = error_of([&] { load_checkpoint_weights(dir); });
    CATCH_CHECK_THAT(msg, Contains("'a.bias'"));
  }
  CATCH_SECTION("a shard holding a tensor listed for another shard is an error") {
    save_safetensors(dir / s1, {{"a.weight", one["a.weight"]}, {"a.bias", one["a.bias"]},
                                {"b.ids", torch::zeros({5}, torch::kInt64)}});
    auto msg = error_of([&] { load_checkpoint_weights(dir); });
    CATCH_CHECK_THAT(msg, Contains(s1) && Contains("'b.ids'") && Contains("lists in shard '" + s2 + "'"));
  }
  CATCH_SECTION("a shard holding a tensor the index does not list is an error") {
    save_safetensors(dir / s2, {{"b.weight", two["b.weight"]}, {"b.ids", two["b.ids"]},
                                {"stray", torch::ones({1})}});
    auto msg = error_of([&] { load_checkpoint_weights(dir); });
    CATCH_CHECK_THAT(msg, Contains(s2) && Contains("'stray'") && Contains("does not list"));
  }
  CATCH_SECTION("a corrupt shard is reported with the shard's name") {
    write_all(dir / s2, "junk");
    auto msg = error_of([&] { load_checkpoint_weights(dir); });
    CATCH_CHECK_THAT(msg, Contains(s2) && Contains("4 bytes long"));
  }
  CATCH_SECTION("malformed indexes") {
    write_all(index, "{\"weight_map\": ");
    CATCH_CHECK_THAT(error_of([&] { load_checkpoint_weights(dir); }),
                     Contains(index.string()) && Contains("not valid JSON"));
    write_all(index, R"({"metadata": {}})");
    CATCH_CHECK_THAT(error_of([&] { load_checkpoint_weights(dir); }), Contains("weight_map"));
    write_index("");
    CATCH_CHECK_THAT(error_of([&] { load_checkpoint_weights(dir); }), Contains("lists no tensors"));
    write_index(R"("a.weight": 3)");
    CATCH_CHECK_THAT(error_of([&] { load_checkpoint_weights(dir); }), Contains("'a.weight'"));
    write_index(R"("a.weight": "../elsewhere.safetensors")");
    CATCH_CHECK_THAT(error_of([&] { load_checkpoint_weights(dir); }),
                     Contains("'a.weight'") && Contains("not a plain file name"));
  }
  fs::remove_all(dir);
}

CATCH_TEST_CASE("safetensors checkpoint folder without weights", "[safetensors]") {
  const auto dir = headprune::testing::temp_dir("st-noweights");
  auto msg = error_of([&] { load_checkpoint_weights(dir); });
  CATCH_CHECK_THAT(msg, Contains(dir.string()) && Contains("model.safetensors.index.json") &&
                            Contains("pytorch_model.bin") && Contains("convert"));
  write_all(dir / "pytorch_model.bin", "pickle");
  msg = error_of([&] { load_checkpoint_weights(dir); });
  CATCH_CHECK_THAT(msg, Contains("found pytorch_model.bin") && Contains("not supported"));
  msg = error_of([&] { load_checkpoint_weights(dir / "absent"); });
  CATCH_CHECK_THAT(msg, Contains("does not exist"));
  fs::remove_all(dir);
}
