// Every input works exactly or is refused (issue 11): LLaMA reports and inspect, per-head
// costs, sentence-transformers Dense and multi-mode pooling, tensors the architecture does not
// use, Hugging Face cache folders (symlinks), F16 sources, the config allow-list, and corpus
// files that are missing or not UTF-8. Real checkpoints: all-MiniLM-L6-v2 and stories260K.
#include <cstring>
#include <fstream>

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/flops.h"
#include "models/formats/llama2c.h"
#include "models/formats/safetensors.h"
#include "models/head_costs.h"
#include "models/inputs.h"
#include "models/loader.h"
#include "models/model_family.h"
#include "models/registry.h"
#include "models/remote_code.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "pruner/measure/inspect.h"
#include "pruner/records/gate_record.h"
#include "pruner/report/report.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/surgery.h"
#include "pruner/text/corpus.h"
#include "pruner/training/sparsity_measure.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string message_or_none(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

/// A copy of all-MiniLM-L6-v2 whose files are what `edit` leaves.
fs::path minilm_copy(const std::string& tag) {
  const auto dir = testing::temp_dir(tag);
  fs::copy(testing::minilm_dir(), dir, fs::copy_options::recursive);
  return dir;
}

void write_json(const fs::path& file, const nlohmann::json& j) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << j.dump(2);
}

using testing::converted_stories;
using testing::stories_dir;

models::ModelInputs encode(const models::Checkpoint& ckpt, const std::vector<std::string>& texts) {
  const auto& wordpiece = dynamic_cast<const models::WordPieceTokenizer&>(*ckpt.tokenizer);
  return models::to_model_inputs(wordpiece.encode_batch(texts, 64), torch::kCPU);
}

torch::Tensor embed(const models::Checkpoint& ckpt, const std::vector<std::string>& texts) {
  torch::NoGradGuard no_grad;
  auto in = encode(ckpt, texts);
  return ckpt.pooling.embed(ckpt.model->forward(in, nullptr).last_hidden_state, in.attention_mask);
}

/// apply --remove-heads SPEC on `ckpt`, exported to `out`.
pruner::ApplyResult prune_to(models::Checkpoint& ckpt, const char* spec, const fs::path& out) {
  const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(spec), ckpt.model->config());
  return pruner::apply_and_export(ckpt, plan, out, false, nlohmann::json::object(), torch::kCPU);
}

const std::vector<std::string> kTexts = {"A man is playing a guitar.",
                                         "The quick brown fox jumps over the lazy dog again."};

}  // namespace

CATCH_TEST_CASE("report and inspect on a uniform LLaMA export use the original heads", "[llama][edges]") {
  auto ckpt = models::load_checkpoint(converted_stories(), torch::kCPU);
  const auto out = testing::temp_dir("stories-uniform") / "out";
  prune_to(ckpt, R"({"0":[1,3,5,7],"1":[1,3,5,7],"2":[1,3,5,7],"3":[1,3,5,7],"4":[1,3,5,7]})", out);
  // The export is a plain LLaMA config with 4 query heads renumbered 0..3 ...
  const auto config = models::read_config_file(out);
  CATCH_CHECK(config.num_attention_heads == 4);
  CATCH_CHECK(config.original_num_attention_heads == 8);
  // ... and the report names the original heads 0,2,4,6 of 8.
  const auto report = pruner::load_report(out);
  CATCH_CHECK(report.num_attention_heads == 8);
  CATCH_CHECK(report.heads_total() == 40);
  CATCH_CHECK(report.heads_kept() == 20);
  for (const auto& layer : report.layers)
    CATCH_CHECK(layer.kept_indices() == std::vector<int64_t>{0, 2, 4, 6});
  CATCH_CHECK_THAT(pruner::to_text(report), Contains("20 of 40 heads kept"));

  auto reloaded = models::load_checkpoint(out, torch::kCPU);
  const auto summary = pruner::summarize(reloaded, 128);
  CATCH_CHECK(summary.original_num_attention_heads == 8);
  CATCH_CHECK(summary.num_key_value_heads_per_layer == std::vector<int64_t>(5, 4));
  CATCH_CHECK_THAT(pruner::to_text(summary), Contains("total 20 of 40"));

  // Pruned again, the record still speaks of the original numbering.
  const auto again = out.parent_path() / "again";
  prune_to(reloaded, R"({"0":[0]})", again);
  const auto second = pruner::load_report(again);
  CATCH_CHECK(second.layers[0].kept_indices() == std::vector<int64_t>{2, 4, 6});
  CATCH_CHECK(second.num_attention_heads == 8);
}

CATCH_TEST_CASE("inspect and apply accept a llama2.c .bin", "[llama][edges]") {
  const auto bin = stories_dir() / "stories260K.bin";
  auto ckpt = models::load_checkpoint(bin, torch::kCPU);
  const auto summary = pruner::summarize(ckpt, 64);
  CATCH_CHECK(summary.weights_file_bytes == fs::file_size(bin));
  CATCH_CHECK(summary.num_key_value_heads_per_layer == std::vector<int64_t>(5, 4));
  const auto out = testing::temp_dir("bin-apply") / "out";
  auto r = prune_to(ckpt, R"({"2":[0,1]})", out);
  CATCH_CHECK(r.heads_after == 38);
  CATCH_CHECK(fs::exists(out / "model.safetensors"));
}

CATCH_TEST_CASE("per-head costs, hand-computed for BERT and GQA LLaMA", "[edges]") {
  // all-MiniLM-L6-v2: H = 384, d = 32, 12 heads, biases; seq 128.
  const auto bert = models::read_config_file(testing::minilm_dir());
  const auto b = models::head_costs(bert, 128);
  CATCH_CHECK(b.params_per_head(bert) == 4 * 384 * 32 + 3 * 32);  // 49,248
  CATCH_CHECK(b.flops_per_head(bert) == 8.0 * 384 * 32 + 4.0 * 128 * 32);
  CATCH_CHECK(models::attention_parameters(bert) == 6 * (12 * (4 * 384 * 32 + 3 * 32) + 384));
  // stories260K: H = 64, d = 8, 8 query heads sharing 4 KV heads, no biases; seq 128.
  const auto llama = models::read_config(models::read_llama2c(stories_dir() / "stories260K.bin").config_json, "stories260K.bin");
  const auto l = models::head_costs(llama, 128);
  CATCH_CHECK(l.params_per_query_head == 2 * 64 * 8);
  CATCH_CHECK(l.params_per_kv_head == 2 * 64 * 8);
  CATCH_CHECK(l.params_per_head(llama) == 2 * 64 * 8);  // K/V go only with the whole group
  CATCH_CHECK(l.flops_per_head(llama) == 4.0 * 64 * 8 + 4.0 * 128 * 8);
  CATCH_CHECK(models::attention_parameters(llama) == 5 * (8 + 4) * 2 * 64 * 8);
  // The sparsity measure uses the same figures, and its total is the whole forward pass.
  const auto m = pruner::sparsity_measure(llama, gates::SparsityUnit::kFlops, 128);
  CATCH_CHECK(m.head_cost.size() == 40);
  CATCH_CHECK(m.head_cost.front() == 4.0 * 64 * 8 + 4.0 * 128 * 8);
  CATCH_CHECK(m.total_cost == models::forward_flops_per_token(llama, 128));
  const auto p = pruner::sparsity_measure(bert, gates::SparsityUnit::kAttentionParams, 128);
  CATCH_CHECK(p.total_cost == static_cast<double>(models::attention_parameters(bert)));
  // FLOPs of the whole pass, by hand: per layer attention + FFN (BERT 4·H·I).
  CATCH_CHECK(models::forward_flops_per_token(bert, 128) ==
              6 * (12 * (8.0 * 384 * 32 + 4.0 * 128 * 32) + 4.0 * 384 * 1536));
}

CATCH_TEST_CASE("sentence-transformers Dense and several pooling modes are computed", "[edges][minilm]") {
  const auto dir = minilm_copy("st-dense");
  auto base = models::load_checkpoint(dir, torch::kCPU);
  // mean + max pooling concatenated (768), then Dense 768 -> 4 with tanh, then Normalize.
  write_json(dir / "1_Pooling/config.json", {{"word_embedding_dimension", 384},
                                             {"pooling_mode_mean_tokens", true},
                                             {"pooling_mode_max_tokens", true}});
  torch::manual_seed(3);
  auto w = torch::randn({4, 768}) * 0.05, bias = torch::randn({4}) * 0.1;
  fs::create_directories(dir / "2_Dense");
  models::save_safetensors(dir / "2_Dense/model.safetensors", {{"linear.weight", w}, {"linear.bias", bias}});
  write_json(dir / "2_Dense/config.json", {{"in_features", 768}, {"out_features", 4}, {"bias", true},
                                           {"activation_function", "torch.nn.modules.activation.Tanh"}});
  write_json(dir / "modules.json",
             nlohmann::json::parse(R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
               {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
               {"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"},
               {"idx":3,"name":"3","path":"3_Normalize","type":"sentence_transformers.models.Normalize"}])"));
  auto ckpt = models::load_checkpoint(dir, torch::kCPU);
  CATCH_CHECK(ckpt.pooling.describe() == "max+mean+dense(768->4,tanh)+normalize");
  auto emb = embed(ckpt, kTexts);
  CATCH_REQUIRE(emb.sizes() == torch::IntArrayRef{2, 4});
  // By hand: sentence-transformers concatenates max before mean.
  torch::NoGradGuard no_grad;
  auto in = encode(ckpt, kTexts);
  auto hidden = base.model->forward(in, nullptr).last_hidden_state;
  auto m = in.attention_mask.unsqueeze(-1).to(torch::kFloat);
  auto mean = (hidden * m).sum(1) / m.sum(1);
  auto max = hidden.masked_fill(m == 0, -1e9).amax(1);
  auto expected = torch::tanh(torch::cat({max, mean}, 1).matmul(w.t()) + bias);
  expected = expected / expected.norm(2, 1, true);
  CATCH_CHECK((emb - expected).abs().max().item<double>() <= testing::float32_tolerance(expected, 1, 768));

  // The export carries the Dense module's weights unchanged.
  const auto out = testing::temp_dir("st-dense-out") / "out";
  prune_to(ckpt, R"({"0":[0]})", out);
  CATCH_CHECK(models::load_safetensors(out / "2_Dense/model.safetensors").at("linear.weight").equal(w));
  CATCH_CHECK(models::load_checkpoint(out, torch::kCPU).pooling.describe() == ckpt.pooling.describe());
}

CATCH_TEST_CASE("sentence-transformers content headprune does not model is refused by name", "[edges][minilm]") {
  const auto dir = minilm_copy("st-refuse");
  const auto pooling = models::read_json_file(dir / "1_Pooling/config.json");
  auto with_pooling = [&](const char* key, const nlohmann::json& value) {
    auto cfg = pooling;
    cfg[key] = value;
    write_json(dir / "1_Pooling/config.json", cfg);
    return message_or_none([&] { models::load_checkpoint(dir, torch::kCPU); });
  };
  CATCH_CHECK_THAT(with_pooling("pooling_mode_lasttoken", true), Contains("pooling_mode_lasttoken"));
  CATCH_CHECK_THAT(with_pooling("pooling_mode_frobnicate", true), Contains("'pooling_mode_frobnicate'"));
  write_json(dir / "1_Pooling/config.json", pooling);
  auto modules = models::read_json_file(dir / "modules.json");
  modules.push_back({{"idx", 3}, {"name", "3"}, {"path", "3_LayerNorm"},
                     {"type", "sentence_transformers.models.LayerNorm"}});
  write_json(dir / "modules.json", modules);
  CATCH_CHECK_THAT(message_or_none([&] { models::load_checkpoint(dir, torch::kCPU); }),
                   Contains("sentence_transformers.models.LayerNorm"));
}

CATCH_TEST_CASE("a folder saved by sentence-transformers 6 is read as sentence-transformers 6 reads it", "[edges][minilm]") {
  const auto dir = minilm_copy("st6");
  // What SentenceTransformer.save writes in 6.x: no max_seq_length (the tokenizer's
  // model_max_length is the limit), pooling_mode as a list concatenated in its order, module
  // input/output names on Normalize.
  write_json(dir / "sentence_bert_config.json",
             {{"transformer_task", "feature-extraction"},
              {"modality_config", {{"text", {{"method", "forward"}, {"method_output_name", "last_hidden_state"}}}}},
              {"module_output_name", "token_embeddings"}});
  auto tokenizer_config = models::read_json_file(dir / "tokenizer_config.json");
  tokenizer_config["model_max_length"] = 128;
  tokenizer_config["backend"] = "tokenizers";
  write_json(dir / "tokenizer_config.json", tokenizer_config);
  write_json(dir / "1_Pooling/config.json", {{"embedding_dimension", 384}, {"pooling_mode", {"mean", "max"}}});
  write_json(dir / "modules.json",
             nlohmann::json::parse(R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.base.modules.transformer.Transformer"},
               {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.sentence_transformer.modules.pooling.Pooling"},
               {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.base.modules.normalize.Normalize"}])"));
  write_json(dir / "2_Normalize/config.json", {{"module_input_name", "sentence_embedding"},
                                               {"module_output_name", "sentence_embedding"}});
  auto ckpt = models::load_checkpoint(dir, torch::kCPU);
  CATCH_CHECK(ckpt.max_seq_length == 128);
  CATCH_CHECK(ckpt.pooling.describe() == "mean+max+normalize");

  const auto refused = [&](const fs::path& file, const char* key, const nlohmann::json& value) {
    auto cfg = models::read_json_file(file);
    const auto saved = cfg;
    cfg[key] = value;
    write_json(file, cfg);
    const auto message = message_or_none([&] { models::load_checkpoint(dir, torch::kCPU); });
    write_json(file, saved);
    return message;
  };
  CATCH_CHECK_THAT(refused(dir / "2_Normalize/config.json", "module_input_name", "token_embeddings"),
                   Contains("module_input_name"));
  CATCH_CHECK_THAT(refused(dir / "1_Pooling/config.json", "pooling_mode", "lasttoken"), Contains("lasttoken"));
  CATCH_CHECK_THAT(refused(dir / "sentence_bert_config.json", "transformer_task", "text-generation"),
                   Contains("transformer_task"));
  CATCH_CHECK_THAT(refused(dir / "sentence_bert_config.json", "modality_config",
                           {{"text", {{"method", "forward"}, {"method_output_name", "hidden_states"}}}}),
                   Contains("modality_config"));
}

CATCH_TEST_CASE("tensors the architecture does not use: carried through, or refused inside its modules", "[edges][minilm]") {
  const auto dir = minilm_copy("unused");
  auto weights = models::load_safetensors(dir / "model.safetensors");
  // A BertForMaskedLM's head: outside every module BertModel has.
  weights["cls.predictions.bias"] = torch::arange(30522, torch::kFloat);
  models::save_safetensors(dir / "model.safetensors", weights);
  auto ckpt = models::load_checkpoint(dir, torch::kCPU);
  CATCH_CHECK(ckpt.unused_keys == std::vector<std::string>{"cls.predictions.bias"});
  const auto out = testing::temp_dir("unused-out") / "out";
  auto r = prune_to(ckpt, R"({"1":[2]})", out);
  CATCH_CHECK(models::load_safetensors(out / "model.safetensors").at("cls.predictions.bias").equal(weights["cls.predictions.bias"]));
  // Only the removed head's parameters leave the file.
  CATCH_CHECK(testing::safetensors_data_bytes(dir / "model.safetensors") - testing::safetensors_data_bytes(out / "model.safetensors") ==
              (r.params_before - r.params_after) * 4);
  bool warned = false;
  for (const auto& w : r.exported.warnings) warned |= w.find("cls.predictions.bias") != std::string::npos;
  CATCH_CHECK(warned);
  // Inside a module the model has (attention output dense), it would be silently dropped: refused.
  weights.erase("cls.predictions.bias");
  weights["encoder.layer.0.attention.output.dense.scale"] = torch::ones({384});
  models::save_safetensors(dir / "model.safetensors", weights);
  CATCH_CHECK_THAT(message_or_none([&] { models::load_checkpoint(dir, torch::kCPU); }),
                   Contains("encoder.layer.0.attention.output.dense.scale"));
}

CATCH_TEST_CASE("a Hugging Face cache snapshot (symlinks into blobs/) exports completely", "[edges][minilm]") {
  const auto root = testing::temp_dir("hf-cache") / "models--x--minilm";
  const auto snapshot = root / "snapshots" / "0123abcd";
  fs::create_directories(root / "blobs");
  int n = 0;
  for (auto it = fs::recursive_directory_iterator(testing::minilm_dir()); it != fs::recursive_directory_iterator(); ++it) {
    const auto rel = it->path().lexically_relative(testing::minilm_dir());
    if (it->is_directory()) { fs::create_directories(snapshot / rel); continue; }
    const auto blob = root / "blobs" / ("blob" + std::to_string(++n));
    fs::copy_file(it->path(), blob);
    fs::create_directories((snapshot / rel).parent_path());
    fs::create_symlink(fs::relative(blob, (snapshot / rel).parent_path()), snapshot / rel);
  }
  CATCH_REQUIRE(fs::is_symlink(snapshot / "vocab.txt"));
  auto ckpt = models::load_checkpoint(snapshot, torch::kCPU);
  const auto out = testing::temp_dir("hf-cache-out") / "out";
  prune_to(ckpt, R"({"0":[1]})", out);
  for (const char* file : {"vocab.txt", "tokenizer.json", "tokenizer_config.json", "modules.json",
                           "sentence_bert_config.json", "1_Pooling/config.json"}) {
    CATCH_INFO(file);
    CATCH_CHECK(fs::is_regular_file(out / file));
    CATCH_CHECK(!fs::is_symlink(out / file));
  }
}

CATCH_TEST_CASE("an F16 source is exported in F16", "[edges][minilm]") {
  const auto dir = minilm_copy("f16");
  auto weights = models::load_safetensors(dir / "model.safetensors");
  for (auto& [name, t] : weights)
    if (t.is_floating_point()) t = t.to(torch::kHalf);
  models::save_safetensors(dir / "model.safetensors", weights);
  auto ckpt = models::load_checkpoint(dir, torch::kCPU);
  const auto out = testing::temp_dir("f16-out") / "out";
  auto r = prune_to(ckpt, R"({"2":[0, 1]})", out);
  const auto written = models::load_safetensors(out / "model.safetensors");
  CATCH_CHECK(written.at("encoder.layer.2.attention.self.query.weight").scalar_type() == torch::kHalf);
  CATCH_CHECK(written.at("embeddings.word_embeddings.weight").scalar_type() == torch::kHalf);
  CATCH_CHECK(r.weights_dtypes == "Half");
  // Two bytes per removed parameter.
  CATCH_CHECK(testing::safetensors_data_bytes(dir / "model.safetensors") - testing::safetensors_data_bytes(out / "model.safetensors") ==
              (r.params_before - r.params_after) * 2);
  CATCH_CHECK(r.reload_max_abs_diff == 0);
}

CATCH_TEST_CASE("config keys outside the allow-list are refused by name", "[edges][minilm]") {
  const auto dir = minilm_copy("config-keys");
  const auto config = models::read_json_file(dir / "config.json");
  auto with = [&](const char* key, const nlohmann::json& value) {
    auto cfg = config;
    cfg[key] = value;
    return message_or_none([&] { models::read_config(cfg, "config.json"); });
  };
  CATCH_CHECK_THAT(with("position_embedding_type", "relative_key"), Contains("position_embedding_type"));
  CATCH_CHECK_THAT(with("is_decoder", true), Contains("is_decoder"));
  CATCH_CHECK_THAT(with("embedding_size", 128), Contains("'embedding_size'"));
  CATCH_CHECK_THAT(with("problem_type", "regression"), Contains("problem_type"));
  CATCH_CHECK(with("hidden_dropout_prob", 0.3) == "(no error)");  // training only
  // Custom modelling code is refused; headprune's own auto_map (its exports) is accepted.
  CATCH_CHECK_THAT(with("auto_map", {{"AutoModel", "modeling_x.XModel"}}), Contains("auto_map"));
  const auto ours = models::read_config(config, "c").family().remote_code()->auto_map;
  CATCH_CHECK(with("auto_map", ours) == "(no error)");
  // An earlier export's, registering fewer of the file's classes, is ours too; one class more is not.
  CATCH_CHECK(with("auto_map", {{"AutoModel", ours.at("AutoModel")}}) == "(no error)");
  auto more = ours;
  more["AutoModelForMaskedLM"] = "modeling_headprune_bert.HeadpruneBertForMaskedLM";
  CATCH_CHECK_THAT(with("auto_map", more), Contains("auto_map"));
  CATCH_CHECK_THAT(with("auto_map", {{"AutoModel", "modeling_headprune_bert.Other"}}), Contains("auto_map"));
  auto llama = models::read_llama2c(stories_dir() / "stories260K.bin").config_json;
  llama["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  CATCH_CHECK_THAT(message_or_none([&] { models::read_config(llama, "c"); }), Contains("rope_scaling"));
  llama["rope_scaling"] = nullptr;
  llama["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  CATCH_CHECK(models::read_config(llama, "c").rope_theta == 500000.0);
}

CATCH_TEST_CASE("corpus files: missing, a folder, not UTF-8", "[edges]") {
  auto ckpt = models::load_checkpoint(converted_stories(), torch::kCPU);
  const auto dir = testing::temp_dir("corpus-edges");
  pruner::CorpusOptions o;
  auto load = [&](const fs::path& f) {
    return message_or_none([&] { pruner::load_corpus({f}, *ckpt.tokenizer, o); });
  };
  CATCH_CHECK_THAT(load(dir / "absent.txt"), Contains("absent.txt") && Contains("no such file"));
  CATCH_CHECK_THAT(load(dir), Contains("is a folder"));
  std::ofstream(dir / "latin1.txt") << "fine line\ncaf\xe9 au lait\n";
  CATCH_CHECK_THAT(load(dir / "latin1.txt"), Contains("line 2") && Contains("not valid UTF-8"));
}

CATCH_TEST_CASE("parsers: hostile sizes and types are errors, not overflow or huge allocations", "[edges]") {
  // A llama2.c header whose sizes multiply past int64 (was signed overflow).
  const int32_t huge[7] = {2147483646, 2147483646, 2147483647, 1, 1, 2147483647, 2147483647};
  CATCH_CHECK_THAT(message_or_none([&] {
                     models::parse_llama2c_header(reinterpret_cast<const char*>(huge), sizeof huge, 28, "h.bin");
                   }),
                   Contains("more than 2^63 bytes"));
  // A tokenizer token claiming 2 GB: reported as truncated before anything is allocated.
  std::string tok(4, '\0');
  const int32_t max_len = 2147483647, len = 2147483647;
  const float score = 0;
  std::memcpy(tok.data(), &max_len, 4);
  tok.append(reinterpret_cast<const char*>(&score), 4).append(reinterpret_cast<const char*>(&len), 4);
  CATCH_CHECK_THAT(message_or_none([&] { models::Llama2cTokenizer::from_bytes(tok, 512, "t.bin"); }),
                   Contains("truncated while reading the bytes of token 0"));
  // A list of end tokens that are not integers (was an uncaught JSON type error).
  auto llama = models::read_llama2c(stories_dir() / "stories260K.bin").config_json;
  llama["eos_token_id"] = {"</s>"};
  CATCH_CHECK_THAT(message_or_none([&] { models::read_config(llama, "c"); }), Contains("eos_token_id"));
  // 444,444,444,448 query heads with an explicit head_dim passed every divisibility check and
  // the per-layer head lists asked for gigabytes (fuzz finding, config_json).
  auto many = models::read_llama2c(stories_dir() / "stories260K.bin").config_json;
  many["num_attention_heads"] = int64_t{444444444448};
  many["head_dim"] = 8;
  CATCH_CHECK_THAT(message_or_none([&] { models::read_config(many, "c"); }),
                   Contains("is more heads than headprune handles"));
  // An integer too large for int64 parses as a float; casting it was undefined behaviour
  // (fuzz finding in gates.json, the same pattern in config.json).
  auto gates = nlohmann::json::parse(
      std::ifstream(testing::source_dir() / "tests/fuzz/corpus/gates_json/small.json"));
  gates["model"]["kept_heads"][1][3] = nlohmann::json::parse("355555555555555555555555555555555555555555555");
  CATCH_CHECK_THAT(message_or_none([&] { pruner::GateState::from_json(gates, "gates.json"); }),
                   Contains("kept_heads[1][3] must be an integer"));
  llama["eos_token_id"] = 2;
  llama["num_hidden_layers"] = 5.0e30;
  CATCH_CHECK_THAT(message_or_none([&] { models::read_config(llama, "c"); }),
                   Contains("num_hidden_layers") && Contains("must be an integer"));
}
