#include "pruner/surgery/onnx_export.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "models/errors.h"
#include "models/formats/onnx_graph.h"
#include "models/model_family.h"
#include "pruner/surgery/atomic_write.h"

namespace headprune::pruner {
namespace {

/// protobuf refuses to serialize a message of 2 GiB or more; keep room for the graph itself.
constexpr int64_t kMaxWeightBytes = (int64_t{2} << 30) - (int64_t{64} << 20);

std::string dim(int64_t n) { return std::to_string(n); }

}  // namespace

OnnxModel build_onnx(const models::Checkpoint& ckpt, bool sentence_embedding) {
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
    const auto& bert = dynamic_cast<const models::BertModel&>(*ckpt.model);
    output("logits", ckpt.classifier->add_to_onnx(g, bert, values.last_hidden_state),
           {"batch_size", dim(ckpt.classifier->num_labels())});
  }
  if (sentence_embedding && ckpt.pooling.from_sentence_transformers)
    output("sentence_embedding", ckpt.pooling.add_to_onnx(g, values.last_hidden_state, "attention_mask"),
           {"batch_size", dim(ckpt.pooling.embedding_size(config.hidden_size))});
  result.weight_bytes = g.initializer_bytes();
  if (result.weight_bytes > kMaxWeightBytes)
    throw Error(fmt::format("the model's weights take {:.2f} GiB as float32; one ONNX file holds at "
                            "most 2 GiB (protobuf) and headprune does not write ONNX external data",
                            static_cast<double>(result.weight_bytes) / (1 << 30)));
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    throw Error(fmt::format("the ONNX checker rejected the graph headprune built (please report "
                            "this): {}",
                            e.what()));
  }
  if (!proto.SerializeToString(&result.bytes)) throw Error("protobuf could not serialize the ONNX model");
  return result;
}

void check_onnx_target(const std::filesystem::path& file, bool force) {
  namespace fs = std::filesystem;
  if (fs::is_directory(file))
    throw Error(fmt::format("--out {} is a folder; give the .onnx file to write", file.string()));
  if (fs::exists(file) && !force)
    throw Error(fmt::format("--out {} exists; choose another file or pass --force to replace it",
                            file.string()));
  const auto parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent))
    throw Error(fmt::format("--out {}: folder {} does not exist", file.string(), parent.string()));
}

OnnxModel export_onnx(const models::Checkpoint& ckpt, const std::filesystem::path& file, bool force,
                      bool sentence_embedding) {
  check_onnx_target(file, force);
  auto model = build_onnx(ckpt, sentence_embedding);
  write_file_atomic(file, model.bytes);
  return model;
}

}  // namespace headprune::pruner
