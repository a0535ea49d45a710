#include "models/formats/onnx_graph.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

/// raw_data is little-endian (onnx.proto); so is every machine headprune runs on.
void require_little_endian() {
  const uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  if (first != 1) throw Error("ONNX export needs a little-endian machine (raw_data byte order)");
}

void set_dims(onnx::ValueInfoProto& info, int32_t elem_type, const std::vector<std::string>& dims) {
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos)
      dim->set_dim_value(std::stoll(d));
    else if (!d.empty())
      dim->set_dim_param(d);
  }
}

}  // namespace

std::string OnnxGraph::fresh(const std::string& stem) { return fmt::format("{}_{}", stem, counter_++); }

std::string OnnxGraph::int64_input(const std::string& name, const std::vector<std::string>& dims) {
  auto* input = graph_.add_input();
  input->set_name(name);
  set_dims(*input, onnx::TensorProto_DataType_INT64, dims);
  return name;
}

void OnnxGraph::float_output(const std::string& name, const std::string& value,
                             const std::vector<std::string>& dims) {
  if (value != name) {
    auto* node = graph_.add_node();
    node->set_op_type("Identity");
    node->set_name(fresh("Identity"));
    node->add_input(value);
    node->add_output(name);
  }
  auto* output = graph_.add_output();
  output->set_name(name);
  set_dims(*output, onnx::TensorProto_DataType_FLOAT, dims);
}

std::string OnnxGraph::weight(const std::string& name, const torch::Tensor& tensor) {
  require_little_endian();
  for (const auto& existing : graph_.initializer())
    if (existing.name() == name) throw Error(fmt::format("ONNX initializer '{}' written twice", name));
  const auto t = tensor.detach().to(torch::kCPU, torch::kFloat).contiguous();
  auto* init = graph_.add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (auto d : t.sizes()) init->add_dims(d);
  const auto bytes = static_cast<size_t>(t.numel()) * sizeof(float);
  init->set_raw_data(std::string(static_cast<const char*>(t.data_ptr()), bytes));
  bytes_ += static_cast<int64_t>(bytes);
  return name;
}

std::string OnnxGraph::int64_constant(const std::vector<int64_t>& values, bool scalar) {
  require_little_endian();
  if (scalar && values.size() != 1) throw Error("an ONNX scalar constant holds one value");
  const auto name = fresh("const");
  auto* init = graph_.add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto_DataType_INT64);
  if (!scalar) init->add_dims(static_cast<int64_t>(values.size()));
  init->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
  return name;
}

std::string OnnxGraph::float_constant(float value) {
  return weight(fresh("const"), torch::tensor(value));
}

std::string OnnxGraph::op(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<OnnxAttribute>& attributes) {
  auto* node = graph_.add_node();
  node->set_op_type(op_type);
  const auto out = fresh(op_type);
  node->set_name(out);
  for (const auto& in : inputs) node->add_input(in);
  node->add_output(out);
  for (const auto& a : attributes) {
    auto* attr = node->add_attribute();
    attr->set_name(a.name);
    if (const auto* i = std::get_if<int64_t>(&a.value)) {
      attr->set_type(onnx::AttributeProto_AttributeType_INT);
      attr->set_i(*i);
    } else if (const auto* f = std::get_if<float>(&a.value)) {
      attr->set_type(onnx::AttributeProto_AttributeType_FLOAT);
      attr->set_f(*f);
    } else {
      attr->set_type(onnx::AttributeProto_AttributeType_INTS);
      for (auto v : std::get<std::vector<int64_t>>(a.value)) attr->add_ints(v);
    }
  }
  return out;
}

std::string OnnxGraph::linear(const std::string& x, const std::string& name, const torch::Tensor& weight,
                              const torch::Tensor& bias) {
  auto y = op("MatMul", {x, this->weight(name + ".weight", weight.t())});
  return bias.defined() ? op("Add", {y, this->weight(name + ".bias", bias)}) : y;
}

std::string OnnxGraph::layer_norm(const std::string& x, const std::string& name, const torch::Tensor& weight,
                                  const torch::Tensor& bias, double eps) {
  return op("LayerNormalization",
            {x, this->weight(name + ".weight", weight), this->weight(name + ".bias", bias)},
            {{"axis", int64_t{-1}}, {"epsilon", static_cast<float>(eps)}});
}

std::string OnnxGraph::rms_norm(const std::string& x, const std::string& name, const torch::Tensor& weight,
                                double eps) {
  auto mean_square = op("ReduceMean", {op("Mul", {x, x})}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
  auto scale = op("Reciprocal", {op("Sqrt", {op("Add", {mean_square, float_constant(static_cast<float>(eps))})})});
  return op("Mul", {op("Mul", {x, scale}), this->weight(name + ".weight", weight)});
}

std::string OnnxGraph::activation(const std::string& x, const std::string& name) {
  if (name == "gelu") {  // 0.5·x·(1 + erf(x/√2)), in the form ONNX Runtime fuses into Gelu
    auto erf = op("Erf", {op("Div", {x, float_constant(static_cast<float>(M_SQRT2))})});
    return op("Mul", {op("Mul", {x, float_constant(0.5F)}), op("Add", {erf, float_constant(1.0F)})});
  }
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") {  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    auto cube = op("Mul", {op("Mul", {x, x}), x});
    auto inner = op("Add", {x, op("Mul", {cube, float_constant(0.044715F)})});
    auto t = op("Tanh", {op("Mul", {inner, float_constant(static_cast<float>(std::sqrt(2.0 / M_PI)))})});
    return op("Mul", {op("Mul", {x, float_constant(0.5F)}), op("Add", {t, float_constant(1.0F)})});
  }
  if (name == "silu") return op("Mul", {x, op("Sigmoid", {x})});
  if (name == "relu") return op("Relu", {x});
  if (name == "tanh") return op("Tanh", {x});
  if (name == "sigmoid") return op("Sigmoid", {x});
  if (name == "identity") return x;
  throw Error(fmt::format("ONNX export: activation '{}' is not supported", name));
}

std::string OnnxGraph::split_heads(const std::string& x, int64_t heads, int64_t head_dim, bool keys_transposed) {
  auto shaped = op("Reshape", {x, int64_constant({0, 0, heads, head_dim})});
  const std::vector<int64_t> perm = keys_transposed ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
  return op("Transpose", {shaped}, {{"perm", perm}});
}

std::string OnnxGraph::merge_heads(const std::string& x, int64_t heads, int64_t head_dim) {
  auto t = op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  return op("Reshape", {t, int64_constant({0, 0, heads * head_dim})});
}

std::string OnnxGraph::attention(const std::string& q, const std::string& k_transposed, const std::string& v,
                                 const std::string& mask_bias, int64_t head_dim) {
  // Divided by √d as transformers does (and as ONNX Runtime's attention fusion expects).
  auto scores = op("Div", {op("MatMul", {q, k_transposed}),
                           float_constant(static_cast<float>(std::sqrt(static_cast<double>(head_dim))))});
  auto probs = op("Softmax", {op("Add", {scores, mask_bias})}, {{"axis", int64_t{-1}}});
  return op("MatMul", {probs, v});
}

std::string OnnxGraph::sequence_length(const std::string& ids) {
  return op("Gather", {op("Shape", {ids}), int64_constant({1}, true)}, {{"axis", int64_t{0}}});
}

std::string OnnxGraph::range(const std::string& n) {
  return op("Range", {int64_constant({0}, true), n, int64_constant({1}, true)});
}

std::string OnnxGraph::to_float(const std::string& x) {
  return op("Cast", {x}, {{"to", int64_t{onnx::TensorProto_DataType_FLOAT}}});
}

std::string OnnxGraph::to_int64(const std::string& x) {
  return op("Cast", {x}, {{"to", int64_t{onnx::TensorProto_DataType_INT64}}});
}

std::string OnnxGraph::mask_bias(const std::string& allowed) {
  return op("Mul", {op("Sub", {float_constant(1.0F), allowed}), float_constant(std::numeric_limits<float>::lowest())});
}

}  // namespace headprune::models
