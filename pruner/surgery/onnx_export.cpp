#include "pruner/surgery/onnx_export.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "models/errors.h"
#include "models/formats/onnx_graph.h"
#include "models/model_family.h"
#include "pruner/atomic_write.h"

namespace headprune::pruner {
namespace {

/// protobuf refuses to serialize a message of 2 GiB or more; keep room for the graph itself.
constexpr int64_t kMaxWeightBytes = (int64_t{2} << 30) - (int64_t{64} << 20);
/// onnx.external_data_helper's defaults: tensors below size_threshold stay inline; those above
/// align_threshold start at a multiple of the allocation granularity.
constexpr size_t kExternalMinBytes = 1024;
constexpr size_t kAlignAboveBytes = size_t{1} << 20;
constexpr size_t kAlignment = size_t{64} << 10;

std::string dim(int64_t n) { return std::to_string(n); }

void add_entry(onnx::TensorProto& tensor, const std::string& key, const std::string& value) {
  auto* entry = tensor.add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

/// Moves the raw data of every initializer of kExternalMinBytes or more into the returned
/// bytes (onnx.proto: TensorProto.data_location EXTERNAL, external_data location / offset /
/// length), freeing each tensor's copy as it goes.
std::string move_to_external_data(onnx::GraphProto& graph, const std::string& location) {
  const auto aligned = [](size_t offset, size_t size) {
    return size >= kAlignAboveBytes ? (offset + kAlignment - 1) / kAlignment * kAlignment : offset;
  };
  size_t total = 0;
  for (const auto& init : graph.initializer())
    if (init.raw_data().size() >= kExternalMinBytes) total = aligned(total, init.raw_data().size()) + init.raw_data().size();
  std::string data;
  data.reserve(total);
  for (auto& init : *graph.mutable_initializer()) {
    const auto size = init.raw_data().size();
    if (size < kExternalMinBytes) continue;
    data.resize(aligned(data.size(), size), '\0');
    add_entry(init, "location", location);
    add_entry(init, "offset", std::to_string(data.size()));
    add_entry(init, "length", std::to_string(size));
    data.append(init.raw_data());
    std::string().swap(*init.mutable_raw_data());
    init.clear_raw_data();
    init.set_data_location(onnx::TensorProto::EXTERNAL);
  }
  return data;
}

}  // namespace

std::string external_data_name(const std::string& model_file_name) { return model_file_name + "_data"; }

OnnxModel build_onnx(const models::Checkpoint& ckpt, bool sentence_embedding, OnnxWeights weights,
                     const std::string& model_file_name) {
  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("headprune");
  proto.set_producer_version(HEADPRUNE_VERSION);
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  auto* graph = proto.mutable_graph();
  graph->set_name(fmt::format("headprune {} ({} heads)", ckpt.model->config().family().model_type(),
                              ckpt.model->config().total_heads()));
  models::OnnxGraph g(*graph);
  const auto& config = ckpt.model->config();
  const auto values = ckpt.model->add_to_onnx(g);
  OnnxModel result;
  for (const auto& input : graph->input()) result.inputs.push_back(input.name());
  const auto output = [&](const std::string& name, const std::string& value, std::vector<std::string> dims) {
    g.float_output(name, value, dims);
    result.outputs.push_back(name);
  };
  output("last_hidden_state", values.last_hidden_state, {"batch_size", "sequence_length", dim(config.hidden_size)});
  if (!values.logits.empty())
    output("logits", values.logits, {"batch_size", "sequence_length", dim(config.vocab_size)});
  if (ckpt.classifier) {
    output("logits", ckpt.classifier->add_to_onnx(g, *ckpt.model, values.last_hidden_state, "attention_mask"),
           {"batch_size", dim(ckpt.classifier->num_labels())});
  }
  if (sentence_embedding && ckpt.pooling.from_sentence_transformers)
    output("sentence_embedding", ckpt.pooling.add_to_onnx(g, values.last_hidden_state, "attention_mask"),
           {"batch_size", dim(ckpt.pooling.embedding_size(config.hidden_size))});
  result.weight_bytes = g.initializer_bytes();
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    throw Error(fmt::format("the ONNX checker rejected the graph headprune built (please report "
                            "this): {}",
                            e.what()));
  }
  if (weights == OnnxWeights::external || result.weight_bytes > kMaxWeightBytes)
    result.external_data = move_to_external_data(*graph, external_data_name(model_file_name));
  if (!proto.SerializeToString(&result.bytes)) throw Error("protobuf could not serialize the ONNX model");
  return result;
}

std::map<std::string, std::string> onnx_folder_files(const models::Checkpoint& checkpoint) {
  const std::filesystem::path file = kOnnxFolderFile;
  auto model = build_onnx(checkpoint, true, OnnxWeights::automatic, file.filename().string());
  std::map<std::string, std::string> files = {{file.string(), std::move(model.bytes)}};
  if (!model.external_data.empty())
    files[(file.parent_path() / external_data_name(file.filename().string())).string()] =
        std::move(model.external_data);
  return files;
}

void check_onnx_target(const std::filesystem::path& file, bool force) {
  namespace fs = std::filesystem;
  if (fs::is_directory(file))
    throw Error(fmt::format("--out {} is a folder; give the .onnx file to write", file.string()));
  const auto data = file.parent_path() / external_data_name(file.filename().string());
  for (const auto& existing : {file, data})
    if (fs::exists(existing) && !force)
      throw Error(fmt::format("--out {}: {} exists; choose another file or pass --force to replace it",
                              file.string(), existing.string()));
  const auto parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent))
    throw Error(fmt::format("--out {}: folder {} does not exist", file.string(), parent.string()));
}

OnnxModel export_onnx(const models::Checkpoint& ckpt, const std::filesystem::path& file, bool force,
                      bool sentence_embedding, OnnxWeights weights) {
  check_onnx_target(file, force);
  const auto name = file.filename().string();
  auto model = build_onnx(ckpt, sentence_embedding, weights, name);
  const auto data = file.parent_path() / external_data_name(name);
  if (!model.external_data.empty())
    write_file_atomic(data, model.external_data);
  else
    std::filesystem::remove(data);  // an earlier export's, which --force replaces
  write_file_atomic(file, model.bytes);
  return model;
}

}  // namespace headprune::pruner
