// ONNX export (issue 13): the model headprune writes is checked by the ONNX library, named as
// Optimum names its exports, and shaped by each layer's heads; bad requests write nothing.
// That ONNX Runtime computes what headprune and transformers compute is shown by
// tools/check_interop.py (onnx-* cases), which runs the exported files.
#include <map>

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/loader.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/onnx_export.h"
#include "tests/cli_support.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

onnx::ModelProto parse_model(const std::string& bytes) {
  onnx::ModelProto proto;
  CATCH_REQUIRE(proto.ParseFromString(bytes));
  return proto;
}

std::vector<std::string> names(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v.name());
  return out;
}

/// Shape of an initializer, or empty when the graph has none of that name.
std::vector<int64_t> initializer_dims(const onnx::ModelProto& proto, const std::string& name) {
  for (const auto& init : proto.graph().initializer())
    if (init.name() == name) return {init.dims().begin(), init.dims().end()};
  return {};
}

}  // namespace

CATCH_TEST_CASE("ONNX of a pruned sentence-transformers BERT: Optimum's names, dynamic dims, each layer's heads",
                "[onnx][minilm]") {
  auto ckpt = models::load_checkpoint(testing::minilm_dir(), torch::kCPU);
  const auto plan = pruner::plan_from_remove_heads(
      nlohmann::json::parse(R"({"0": [0, 1, 2], "2": [0,1,2,3,4,5,6,7,8,9,10,11]})"), ckpt.model->config());
  pruner::apply_in_memory(ckpt, plan);
  const auto model = pruner::build_onnx(ckpt, true);
  const auto proto = parse_model(model.bytes);
  CATCH_CHECK(proto.opset_import(0).version() == pruner::kOnnxOpset);
  CATCH_CHECK(names(proto.graph().input()) == std::vector<std::string>{"input_ids", "attention_mask", "token_type_ids"});
  CATCH_CHECK(names(proto.graph().output()) == std::vector<std::string>{"last_hidden_state", "sentence_embedding"});
  const auto& ids = proto.graph().input(0).type().tensor_type();
  CATCH_CHECK(ids.elem_type() == onnx::TensorProto_DataType_INT64);
  CATCH_CHECK(ids.shape().dim(0).dim_param() == "batch_size");
  CATCH_CHECK(ids.shape().dim(1).dim_param() == "sequence_length");
  // Q weights are stored transposed, [hidden, heads·head_dim]; layer 2 has no Q/K/V at all.
  CATCH_CHECK(initializer_dims(proto, "encoder.layer.0.attention.self.query.weight") == std::vector<int64_t>{384, 9 * 32});
  CATCH_CHECK(initializer_dims(proto, "encoder.layer.1.attention.self.query.weight") == std::vector<int64_t>{384, 12 * 32});
  CATCH_CHECK(initializer_dims(proto, "encoder.layer.2.attention.self.query.weight").empty());
  CATCH_CHECK(initializer_dims(proto, "encoder.layer.2.attention.output.dense.bias") == std::vector<int64_t>{384});
  // Every parameter once, as float32 (the model's parameters + the few float constants).
  int64_t params = 0;
  for (const auto& p : ckpt.model->parameters()) params += p.numel();
  CATCH_CHECK(model.weight_bytes >= 4 * (params - 384 * 384 - 384));  // the pooler is not in the graph
  CATCH_CHECK(model.weight_bytes < 4 * params);
  // Without the sentence-transformers output.
  CATCH_CHECK(names(parse_model(pruner::build_onnx(ckpt, false).bytes).graph().output()) ==
              std::vector<std::string>{"last_hidden_state"});
}

CATCH_TEST_CASE("ONNX of a GQA LLaMA with uneven groups: logits and the KV head each query head reads",
                "[onnx][llama]") {
  auto ckpt = models::load_checkpoint(testing::converted_stories(), torch::kCPU);
  const auto plan = pruner::plan_from_remove_heads(nlohmann::json::parse(R"({"0": [0, 1, 2], "4": [1, 3, 5, 7]})"),
                                                   ckpt.model->config());
  pruner::apply_in_memory(ckpt, plan);
  const auto proto = parse_model(pruner::build_onnx(ckpt, true).bytes);
  CATCH_CHECK(names(proto.graph().input()) == std::vector<std::string>{"input_ids", "attention_mask"});
  CATCH_CHECK(names(proto.graph().output()) == std::vector<std::string>{"last_hidden_state", "logits"});
  // Layer 0 keeps query heads 3..7 of 8 (KV groups of 2): KV heads 1, 2, 3 remain.
  CATCH_CHECK(initializer_dims(proto, "model.layers.0.self_attn.q_proj.weight") == std::vector<int64_t>{64, 5 * 8});
  CATCH_CHECK(initializer_dims(proto, "model.layers.0.self_attn.k_proj.weight") == std::vector<int64_t>{64, 3 * 8});
  CATCH_CHECK(initializer_dims(proto, "model.layers.4.self_attn.k_proj.weight") == std::vector<int64_t>{64, 4 * 8});
}

CATCH_TEST_CASE("export-onnx refuses an existing file, a folder and a missing folder, writing nothing", "[onnx][cli]") {
  const auto dir = testing::temp_dir("onnx-cli");
  const auto model = testing::minilm_dir().string();
  const auto file = dir / "m.onnx";
  CATCH_REQUIRE(testing::run_cli({"export-onnx", model, "-o", file.string()}) == 0);
  const auto size = fs::file_size(file);
  CATCH_CHECK(size > 80u << 20);
  CATCH_CHECK(testing::run_cli({"export-onnx", model, "-o", file.string()}) == 1);  // exists
  CATCH_CHECK(fs::file_size(file) == size);
  CATCH_CHECK(testing::run_cli({"export-onnx", model, "-o", dir.string()}) == 1);  // a folder
  CATCH_CHECK(testing::run_cli({"export-onnx", model, "-o", (dir / "no/such/m.onnx").string()}) == 1);
  CATCH_CHECK_FALSE(fs::exists(dir / "no"));
  CATCH_CHECK(testing::run_cli({"export-onnx", model}) == 2);  // no --out
  // apply --onnx: the file inside the exported folder, where Optimum and sentence-transformers look.
  const auto out = dir / "pruned";
  CATCH_REQUIRE(testing::run_cli({"apply", model, "--remove-heads", R"({"1": [4]})", "-o", out.string(), "--onnx"}) == 0);
  CATCH_CHECK(fs::file_size(out / pruner::kOnnxFolderFile) > 80u << 20);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CATCH_CHECK(entries == 2);  // m.onnx and pruned/: no temporary files left
}

CATCH_TEST_CASE("ONNX external data: the same tensors, byte for byte, beside the model at aligned offsets",
                "[onnx][llama]") {
  auto ckpt = models::load_checkpoint(testing::converted_stories(), torch::kCPU);
  const auto inline_proto = parse_model(pruner::build_onnx(ckpt, true).bytes);
  const auto external = pruner::build_onnx(ckpt, true, pruner::OnnxWeights::external, "m.onnx");
  const auto proto = parse_model(external.bytes);
  CATCH_REQUIRE(proto.graph().initializer_size() == inline_proto.graph().initializer_size());
  std::size_t moved = 0;
  for (int i = 0; i < proto.graph().initializer_size(); ++i) {
    const auto& tensor = proto.graph().initializer(i);
    const auto& original = inline_proto.graph().initializer(i);
    CATCH_REQUIRE(tensor.name() == original.name());
    if (original.raw_data().size() < 1024) {  // small constants stay inline
      CATCH_CHECK(tensor.raw_data() == original.raw_data());
      continue;
    }
    ++moved;
    std::map<std::string, std::string> entry;
    for (const auto& kv : tensor.external_data()) entry[kv.key()] = kv.value();
    CATCH_CHECK(tensor.data_location() == onnx::TensorProto::EXTERNAL);
    CATCH_CHECK(tensor.raw_data().empty());
    CATCH_CHECK(entry["location"] == "m.onnx_data");
    const auto offset = std::stoull(entry["offset"]), length = std::stoull(entry["length"]);
    CATCH_CHECK(length == original.raw_data().size());
    if (length >= (1u << 20)) CATCH_CHECK(offset % (64u << 10) == 0);
    CATCH_REQUIRE(offset + length <= external.external_data.size());
    CATCH_CHECK(external.external_data.compare(offset, length, original.raw_data()) == 0);
  }
  CATCH_CHECK(moved == 5 * 7 + 1);  // per layer q/k/v/o and the three MLP matrices, and the embedding
}

CATCH_TEST_CASE("export-onnx --external-data writes FILE_data, and --force without it removes the stale one",
                "[onnx][cli]") {
  const auto dir = testing::temp_dir("onnx-external");
  const auto model = testing::converted_stories().string();
  const auto file = dir / "m.onnx", data = dir / "m.onnx_data";
  CATCH_REQUIRE(testing::run_cli({"export-onnx", model, "-o", file.string(), "--external-data"}) == 0);
  CATCH_CHECK(fs::file_size(data) > fs::file_size(file));
  fs::remove(file);  // a data file alone still blocks a new export without --force
  CATCH_CHECK(testing::run_cli({"export-onnx", model, "-o", file.string()}) == 1);
  CATCH_CHECK_FALSE(fs::exists(file));
  CATCH_REQUIRE(testing::run_cli({"export-onnx", model, "-o", file.string(), "--force"}) == 0);
  CATCH_CHECK(fs::exists(file));
  CATCH_CHECK_FALSE(fs::exists(data));
}
