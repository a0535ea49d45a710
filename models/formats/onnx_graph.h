// Building an ONNX graph from LibTorch weights, with the ONNX library's protobuf classes
// (Debian libonnx-dev): named values, initializers and the few composite blocks every
// transformer uses. The model families write their own graphs with it (models/<family>/).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/types.h>

namespace onnx {
class GraphProto;
}

namespace headprune::models {

/// One node attribute: an int, a float or a list of ints (ONNX AttributeProto INT, FLOAT, INTS).
struct OnnxAttribute {
  std::string name;
  std::variant<int64_t, float, std::vector<int64_t>> value;
};

/// Appends nodes and initializers to an `onnx::GraphProto`. Values are referred to by name;
/// every op() output gets a fresh name ("<op_type>_<n>"). Initializers are float32 (weights)
/// or int64 (shapes, indices), stored in raw_data little-endian as the ONNX spec (onnx.proto,
/// TensorProto.raw_data) requires.
class OnnxGraph {
 public:
  explicit OnnxGraph(onnx::GraphProto& graph) : graph_(graph) {}

  /// Declares a graph input of element type int64 with symbolic dims (e.g. {"batch_size",
  /// "sequence_length"}); returns `name`.
  std::string int64_input(const std::string& name, const std::vector<std::string>& dims);
  /// Declares a float32 graph output `name` with symbolic or fixed dims ("" = unnamed dynamic,
  /// a number = fixed), fed by `value` (an Identity node when the names differ).
  void float_output(const std::string& name, const std::string& value, const std::vector<std::string>& dims);

  /// A float32 initializer holding `tensor` (any float dtype, any device; copied). Returns
  /// `name`. @throws headprune::Error if the name is taken.
  std::string weight(const std::string& name, const torch::Tensor& tensor);
  /// An int64 initializer: a 1-D tensor of `values`, or a scalar (0-D) when `scalar`.
  std::string int64_constant(const std::vector<int64_t>& values, bool scalar = false);
  /// A float32 scalar initializer.
  std::string float_constant(float value);

  /// Adds a node `op_type`(inputs) with one output; returns the output's name.
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                 const std::vector<OnnxAttribute>& attributes = {});

  // --- composite blocks (torch.nn semantics) ---

  /// x·Wᵀ + b for W [out, in] (stored transposed as "<name>.weight"), b [out] or undefined.
  std::string linear(const std::string& x, const std::string& name, const torch::Tensor& weight,
                     const torch::Tensor& bias);
  /// LayerNormalization over the last axis (opset 17) with weight, bias and epsilon.
  std::string layer_norm(const std::string& x, const std::string& name, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps);
  /// x·rsqrt(mean(x², last axis) + eps)·weight (LLaMA's RMSNorm).
  std::string rms_norm(const std::string& x, const std::string& name, const torch::Tensor& weight,
                       double eps);
  /// An activation by HF name: "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh" (tanh
  /// approximation), "relu", "silu", "tanh", "sigmoid", "identity".
  /// @throws headprune::Error for another name.
  std::string activation(const std::string& x, const std::string& name);
  /// [B, T, heads·head_dim] -> [B, heads, T, head_dim] (or [B, heads, head_dim, T] when
  /// `keys_transposed`, ready for Q·Kᵀ).
  std::string split_heads(const std::string& x, int64_t heads, int64_t head_dim, bool keys_transposed = false);
  /// [B, heads, T, head_dim] -> [B, T, heads·head_dim].
  std::string merge_heads(const std::string& x, int64_t heads, int64_t head_dim);
  /// softmax(q·kᵀ/√head_dim + mask_bias)·v for q [B,h,T,d], kᵀ [B,h,d,T], v [B,h,T,d] and an
  /// additive mask broadcastable to [B,h,T,T]; returns [B,h,T,d].
  std::string attention(const std::string& q, const std::string& k_transposed, const std::string& v,
                        const std::string& mask_bias, int64_t head_dim);
  /// The sequence length of an int64 [B, T] input as a 0-D int64 value.
  std::string sequence_length(const std::string& ids);
  /// 0, 1, ..., n-1 (int64) for a 0-D int64 value `n`.
  std::string range(const std::string& n);
  /// `x` cast to float32.
  std::string to_float(const std::string& x);
  /// `x` cast to int64.
  std::string to_int64(const std::string& x);
  /// An additive attention mask from a float `allowed` (1 visible, 0 masked): (1 - allowed) ·
  /// the lowest float32, as transformers builds it (masked scores stay finite).
  std::string mask_bias(const std::string& allowed);

  /// Bytes of all initializers so far.
  int64_t initializer_bytes() const { return bytes_; }

 private:
  std::string fresh(const std::string& stem);
  onnx::GraphProto& graph_;
  int64_t counter_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace headprune::models
