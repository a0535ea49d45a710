// FFN neurons gated and removed (issue 52): for every modelled FFN shape (BERT's intermediate /
// output on the real all-MiniLM-L6-v2, DistilBERT's lin1 / lin2, MPNet, ModernBERT's fused GeGLU
// Wi, LLaMA's SwiGLU, Phi-3's fused gate_up_proj, Gemma 3's GeGLU between sandwich norms), a
// 0/1 or fractional FFN multiplier equals physically removing the zeroed neurons and folding the
// rest into the output projection, within the float32 rounding bound of tests/tolerance.h; the
// export writes per-layer widths (headprune.intermediate_sizes) or a plain intermediate_size, and
// headprune reloads it with identical outputs. transformers reloading such exports is
// tools/check_interop.py's FFN cases.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/errors.h"
#include "models/gguf_model.h"
#include "models/loader.h"
#include "pruner/surgery/export.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

/// Token ids every fixture's vocabulary holds, as one unpadded batch [2, 12].
models::ModelInputs some_tokens(const models::ModelConfig& c) {
  torch::manual_seed(7);
  const auto ids = torch::randint(5, std::min<int64_t>(c.vocab_size, 500), {2, 12}, torch::kLong);
  return {ids, torch::ones_like(ids), {}};
}

/// The model's output to compare: logits for a decoder, the last hidden state for an encoder.
torch::Tensor output_of(models::AttentionModel& model, const models::ModelInputs& in, const models::Multipliers& m) {
  torch::NoGradGuard no_grad;
  auto out = model.forward(in, m);
  return out.logits.defined() ? out.logits : out.last_hidden_state;
}

/// Per layer, the neurons to remove: layer 1 loses every one, the others every third (offset by
/// the layer), so that widths differ.
std::vector<std::vector<int64_t>> uneven_removal(const models::ModelConfig& c) {
  std::vector<std::vector<int64_t>> removed(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (int64_t i = 0; i < c.ffn_width(l); ++i)
      if (l == 1 || (i + l) % 3 == 0) removed[static_cast<size_t>(l)].push_back(i);
  return removed;
}

/// Multipliers that zero `removed` and give the others a value in [0.5, 1] (or 1 when `fractional` is false).
models::FfnMultipliers multipliers_for(const models::ModelConfig& c, const std::vector<std::vector<int64_t>>& removed,
                                       bool fractional) {
  models::FfnMultipliers out;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    auto m = fractional ? 0.5 + 0.5 * torch::rand({c.ffn_width(l)}) : torch::ones({c.ffn_width(l)});
    for (auto i : removed[static_cast<size_t>(l)]) m[i] = 0.0;
    out.push_back(m);
  }
  return out;
}

/// The fixture folders, one per FFN shape.
std::vector<fs::path> ffn_fixtures() {
  return {testing::minilm_dir(),          testing::fixture_path("distilbert"), testing::fixture_path("mpnet"),
          testing::fixture_path("modernbert"), testing::fixture_path("llama3"),    testing::fixture_path("phi3"),
          testing::fixture_path("gemma3")};
}

}  // namespace

CATCH_TEST_CASE("FFN multipliers equal removing the neurons, in every FFN shape", "[ffn]") {
  for (const auto& dir : ffn_fixtures()) {
    CATCH_CAPTURE(dir.string());
    auto ckpt = models::load_checkpoint(dir, torch::kCPU);
    auto& model = *ckpt.model;
    const auto in = some_tokens(model.config());
    const auto removed = uneven_removal(model.config());
    const auto ffn = multipliers_for(model.config(), removed, true);
    const auto dense = output_of(model, in, {});
    const auto gated = output_of(model, in, {nullptr, &ffn});
    for (int64_t l = 0; l < model.config().num_hidden_layers; ++l)
      model.prune_ffn(l, removed[static_cast<size_t>(l)], ffn[static_cast<size_t>(l)]);
    const auto pruned = output_of(model, in, {});
    const auto widths = model.config().intermediate_sizes;
    CATCH_CHECK(widths[1] == 0);
    CATCH_CHECK(widths[0] == model.config().intermediate_size - (model.config().intermediate_size + 2) / 3);
    const double tol = testing::float32_tolerance(model.config(), dense);
    CATCH_CHECK((gated - pruned).abs().max().item<double>() <= tol);
    CATCH_CHECK((dense - pruned).abs().max().item<double>() > 10 * tol);  // the check above can fail

    // The export holds the widths, and reloads to the same model.
    const auto out = testing::temp_dir("ffn-export");
    pruner::export_checkpoint(ckpt, out, true, model.config().kept_heads, {}, nlohmann::json::object());
    const auto written = models::read_json_file(out / "config.json");
    CATCH_CHECK(written["headprune"]["intermediate_sizes"].get<std::vector<int64_t>>() == widths);
    CATCH_CHECK(written.contains("auto_map"));  // only headprune's modelling code builds it
    auto again = models::load_checkpoint(out, torch::kCPU);
    CATCH_CHECK(again.model->config().intermediate_sizes == widths);
    CATCH_CHECK(torch::equal(output_of(*again.model, in, {}), pruned));
  }
}

CATCH_TEST_CASE("one FFN width in every layer exports as a plain intermediate_size", "[ffn]") {
  auto ckpt = models::load_checkpoint(testing::fixture_path("llama3"), torch::kCPU);
  auto& model = *ckpt.model;
  const int64_t width = model.config().intermediate_size;
  for (int64_t l = 0; l < model.config().num_hidden_layers; ++l) model.prune_ffn(l, {0, 2, width - 1}, {});
  const auto out = testing::temp_dir("ffn-plain");
  const auto result =
      pruner::export_checkpoint(ckpt, out, true, model.config().kept_heads, {}, nlohmann::json::object());
  const auto written = models::read_json_file(out / "config.json");
  CATCH_CHECK(written["intermediate_size"] == width - 3);
  CATCH_CHECK(!written["headprune"].contains("intermediate_sizes"));
  CATCH_CHECK(!written.contains("auto_map"));  // transformers' own LlamaForCausalLM builds it
  CATCH_CHECK(result.warnings.empty());
  const auto in = some_tokens(model.config());
  auto again = models::load_checkpoint(out, torch::kCPU);
  CATCH_CHECK(torch::equal(output_of(*again.model, in, {}), output_of(model, in, {})));
}

CATCH_TEST_CASE("one FFN width in every layer exports to GGUF, uneven widths are refused", "[ffn][gguf-export]") {
  auto ckpt = models::load_checkpoint(testing::fixture_path("qwen3"), torch::kCPU);
  auto& model = *ckpt.model;
  const int64_t width = model.config().intermediate_size;
  for (int64_t l = 0; l < model.config().num_hidden_layers; ++l) model.prune_ffn(l, {0, 2, width - 1}, {});
  const auto in = some_tokens(model.config());
  const auto out = testing::temp_dir("ffn-gguf");
  // llama.cpp's feed_forward_length holds one width, and the file reads back to the same model.
  const auto file = out / "model.gguf";
  models::export_gguf(ckpt, file, false, models::GgufExportType::kF32);
  const auto back = models::read_gguf_model(file);
  CATCH_CHECK(back.config.intermediate_size == width - 3);
  auto from_gguf = models::load_checkpoint(file, torch::kCPU);
  CATCH_CHECK(torch::equal(output_of(*from_gguf.model, in, {}), output_of(model, in, {})));
  // Uneven widths are refused by name, and no file is written.
  model.prune_ffn(0, {1}, {});
  CATCH_CHECK_THROWS_WITH(models::export_gguf(ckpt, out / "uneven.gguf", false, models::GgufExportType::kF32),
                          Catch::Contains("FFN widths are"));
  CATCH_CHECK(!fs::exists(out / "uneven.gguf"));
}

CATCH_TEST_CASE("bad FFN indices, multipliers and widths are refused by name", "[ffn]") {
  auto ckpt = models::load_checkpoint(testing::fixture_path("llama3"), torch::kCPU);
  auto& model = *ckpt.model;
  const int64_t width = model.config().intermediate_size;
  CATCH_CHECK_THROWS_WITH(model.prune_ffn(0, {width}, {}), Catch::Contains("FFN neuron " + std::to_string(width)));
  CATCH_CHECK_THROWS_WITH(model.prune_ffn(0, {1, 1}, {}), Catch::Contains("listed twice"));
  CATCH_CHECK_THROWS_WITH(model.prune_ffn(0, {1}, torch::ones({2})), Catch::Contains("scale"));
  CATCH_CHECK(model.config().ffn_width(0) == width);  // nothing changed
  const models::FfnMultipliers wrong(static_cast<size_t>(model.config().num_hidden_layers), torch::ones({3}));
  CATCH_CHECK_THROWS_WITH(output_of(model, some_tokens(model.config()), {nullptr, &wrong}),
                          Catch::Contains("FFN multiplier has shape [3]"));

  auto config = models::read_json_file(testing::fixture_path("llama3/config.json"));
  config["headprune"]["intermediate_sizes"] = {1, 2};
  CATCH_CHECK_THROWS_WITH(models::ModelConfig::from_json(config, model.config().family(), "c.json"),
                          Catch::Contains("headprune.intermediate_sizes lists 2 layers"));
  config["headprune"]["intermediate_sizes"] = std::vector<int64_t>(static_cast<size_t>(model.config().num_hidden_layers), width + 1);
  CATCH_CHECK_THROWS_WITH(models::ModelConfig::from_json(config, model.config().family(), "c.json"),
                          Catch::Contains("outside 0..intermediate_size"));
}
