#include "models/sentence_pooling.h"

#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/formats/safetensors.h"

namespace headprune::models {
namespace {

namespace fs = std::filesystem;

/// The class name of a modules.json "type" ("sentence_transformers.models.Pooling" -> "Pooling").
std::string class_name(const std::string& type) {
  const auto dot = type.rfind('.');
  return dot == std::string::npos ? type : type.substr(dot + 1);
}

/// Refuses any key of `cfg` outside `allowed`, naming it.
void check_keys(const nlohmann::json& cfg, const std::set<std::string>& allowed, const fs::path& file) {
  if (!cfg.is_object()) throw Error(fmt::format("{}: expected a JSON object", file.string()));
  for (const auto& [key, value] : cfg.items())
    if (!allowed.count(key))
      throw Error(fmt::format("{}: key '{}' is not supported by headprune (supported: {})",
                              file.string(), key, fmt::join(allowed, ", ")));
}

bool flag(const nlohmann::json& cfg, const char* key, const fs::path& file) {
  if (!cfg.contains(key)) return false;
  if (!cfg.at(key).is_boolean())
    throw Error(fmt::format("{}: '{}' must be true or false", file.string(), key));
  return cfg.at(key).get<bool>();
}

/// sentence-transformers 6's `pooling_mode` (a name or a list of names, concatenated in the
/// list's order) -> the modes. @throws headprune::Error naming an unsupported mode.
std::vector<SentencePooling::Mode> pooling_modes(const nlohmann::json& value, const fs::path& file) {
  using Mode = SentencePooling::Mode;
  static const std::map<std::string, Mode> kModes = {
      {"cls", Mode::kCls}, {"max", Mode::kMax}, {"mean", Mode::kMean},
      {"mean_sqrt_len_tokens", Mode::kMeanSqrtLen}};
  const auto names = value.is_array() ? value : nlohmann::json::array({value});
  std::vector<Mode> modes;
  for (const auto& name : names) {
    if (!name.is_string() || !kModes.count(name.get<std::string>()))
      throw Error(fmt::format("{}: pooling_mode {} is not supported (supported: cls, max, mean, "
                              "mean_sqrt_len_tokens)",
                              file.string(), name.dump()));
    modes.push_back(kModes.at(name.get<std::string>()));
  }
  return modes;
}

/// `<dir>/<path>/config.json` of a Pooling module -> the modes it concatenates. Reads both
/// sentence-transformers 6's `pooling_mode` / `embedding_dimension` and the older
/// `pooling_mode_*` flags / `word_embedding_dimension`; like sentence-transformers 6,
/// `pooling_mode` wins when both are present.
std::vector<SentencePooling::Mode> read_pooling(const fs::path& dir, const std::string& path,
                                                int64_t hidden_size) {
  const auto file = dir / path / "config.json";
  const auto cfg = read_json_file(file);
  check_keys(cfg, {"word_embedding_dimension", "embedding_dimension", "pooling_mode",
                   "pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                   "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                   "pooling_mode_lasttoken", "include_prompt"},
             file);
  for (const char* key : {"word_embedding_dimension", "embedding_dimension"})
    if (cfg.contains(key) && cfg.at(key) != nlohmann::json(hidden_size))
      throw Error(fmt::format("{}: {} {} differs from the model's hidden_size {}", file.string(),
                              key, cfg.at(key).dump(), hidden_size));
  if (cfg.contains("pooling_mode")) return pooling_modes(cfg.at("pooling_mode"), file);
  for (const char* key : {"pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"})
    if (flag(cfg, key, file))
      throw Error(fmt::format("{}: '{}' is not supported (supported pooling: cls, max, mean, "
                              "mean_sqrt_len)",
                              file.string(), key));
  using Mode = SentencePooling::Mode;
  std::vector<Mode> modes;
  // sentence-transformers' Pooling.forward concatenates in this order.
  for (auto [key, mode] : {std::pair{"pooling_mode_cls_token", Mode::kCls},
                           {"pooling_mode_max_tokens", Mode::kMax},
                           {"pooling_mode_mean_tokens", Mode::kMean},
                           {"pooling_mode_mean_sqrt_len_tokens", Mode::kMeanSqrtLen}})
    if (flag(cfg, key, file)) modes.push_back(mode);
  if (modes.empty())
    throw Error(fmt::format("{}: no pooling mode is set to true", file.string()));
  return modes;
}

/// sentence-transformers 6's Dense and Normalize may act on another feature (e.g. token
/// embeddings): only "sentence_embedding" in and out is what headprune computes.
void check_reads_sentence_embedding(const nlohmann::json& cfg, const fs::path& file) {
  for (const char* key : {"module_input_name", "module_output_name"})
    if (cfg.contains(key) && cfg.at(key) != "sentence_embedding")
      throw Error(fmt::format("{}: {} {} is not supported (only \"sentence_embedding\")",
                              file.string(), key, cfg.at(key).dump()));
}

/// A Normalize module's optional config.json (sentence-transformers 6 writes one).
void check_normalize(const fs::path& dir, const std::string& path) {
  const auto file = dir / path / "config.json";
  if (path.empty() || !fs::exists(file)) return;
  const auto cfg = read_json_file(file);
  check_keys(cfg, {"module_input_name", "module_output_name"}, file);
  check_reads_sentence_embedding(cfg, file);
}

/// A Dense module's config and weights; `in_features` is what the pipeline feeds it.
SentenceDense read_dense(const fs::path& dir, const std::string& path, int64_t in_features) {
  const auto file = dir / path / "config.json";
  const auto cfg = read_json_file(file);
  check_keys(cfg, {"in_features", "out_features", "bias", "activation_function",
                   "module_input_name", "module_output_name"},
             file);
  check_reads_sentence_embedding(cfg, file);
  SentenceDense d;
  d.path = path;
  const auto act = cfg.value("activation_function", std::string("torch.nn.modules.activation.Tanh"));
  static const std::map<std::string, std::string> kActivations = {
      {"torch.nn.modules.linear.Identity", "identity"}, {"torch.nn.modules.activation.Tanh", "tanh"},
      {"torch.nn.modules.activation.ReLU", "relu"}, {"torch.nn.modules.activation.Sigmoid", "sigmoid"},
      {"torch.nn.modules.activation.GELU", "gelu"}};
  if (!kActivations.count(act))
    throw Error(fmt::format("{}: activation_function '{}' is not supported (Identity, Tanh, ReLU, "
                            "Sigmoid, GELU)",
                            file.string(), act));
  d.activation = kActivations.at(act);
  const auto in = json_integer(cfg.value("in_features", nlohmann::json(-1)), file.string() + ": in_features");
  const auto out = json_integer(cfg.value("out_features", nlohmann::json(-1)), file.string() + ": out_features");
  if (in != in_features || out <= 0)
    throw Error(fmt::format("{}: in_features {} / out_features {}: the module before it gives {} "
                            "features",
                            file.string(), in, out, in_features));
  const auto weights_file = dir / path / "model.safetensors";
  if (!fs::exists(weights_file))
    throw Error(fmt::format("{} has no model.safetensors (only safetensors weights are read; "
                            "convert pytorch_model.bin with sentence-transformers' save)",
                            (dir / path).string()));
  auto weights = load_safetensors(weights_file);
  const bool bias = cfg.value("bias", true);
  std::set<std::string> expected = {"linear.weight"};
  if (bias) expected.insert("linear.bias");
  for (const auto& [key, t] : weights)
    if (!expected.count(key))
      throw Error(fmt::format("{}: tensor '{}' is not a Dense weight (linear.weight, linear.bias)",
                              weights_file.string(), key));
  if (!weights.count("linear.weight") || weights.at("linear.weight").sizes() != torch::IntArrayRef{out, in} ||
      (bias && (!weights.count("linear.bias") || weights.at("linear.bias").sizes() != torch::IntArrayRef{out})))
    throw Error(fmt::format("{}: expected linear.weight [{}, {}]{}", weights_file.string(), out, in,
                            bias ? fmt::format(" and linear.bias [{}]", out) : ""));
  d.weight = weights.at("linear.weight").to(torch::kFloat);
  if (bias) d.bias = weights.at("linear.bias").to(torch::kFloat);
  return d;
}

/// sentence_bert_config.json: max_seq_length (0 when absent: sentence-transformers 6 no longer
/// writes it); do_lower_case (true would lower-case text before the tokenizer, which headprune
/// does not do) is refused; sentence-transformers 6's task, modality and output keys are
/// accepted with the one value of a text encoder's token embeddings.
int64_t read_transformer_config(const fs::path& dir) {
  const auto file = dir / "sentence_bert_config.json";
  if (!fs::exists(file)) return 0;
  const auto cfg = read_json_file(file);
  check_keys(cfg, {"max_seq_length", "do_lower_case", "transformer_task", "modality_config",
                   "module_output_name"},
             file);
  if (flag(cfg, "do_lower_case", file))
    throw Error(fmt::format("{}: do_lower_case true is not supported (headprune passes text to "
                            "the tokenizer unchanged)",
                            file.string()));
  const std::map<std::string, nlohmann::json> kFixed = {
      {"transformer_task", "feature-extraction"},
      {"modality_config",
       {{"text", {{"method", "forward"}, {"method_output_name", "last_hidden_state"}}}}},
      {"module_output_name", "token_embeddings"}};
  for (const auto& [key, value] : kFixed)
    if (cfg.contains(key) && cfg.at(key) != value)
      throw Error(fmt::format("{}: {} {} is not supported (only {}: a text encoder's token "
                              "embeddings)",
                              file.string(), key, cfg.at(key).dump(), value.dump()));
  if (!cfg.contains("max_seq_length") || cfg["max_seq_length"].is_null()) return 0;
  const auto length = json_integer(cfg["max_seq_length"], file.string() + ": max_seq_length");
  if (length < 1) throw Error(fmt::format("{}: max_seq_length must be positive", file.string()));
  return length;
}

}  // namespace

torch::Tensor SentenceDense::forward(const torch::Tensor& x) const {
  auto y = torch::nn::functional::linear(x, weight.to(x.device(), x.scalar_type()),
                                         bias.defined() ? bias.to(x.device(), x.scalar_type()) : bias);
  if (activation == "tanh") return torch::tanh(y);
  if (activation == "relu") return torch::relu(y);
  if (activation == "sigmoid") return torch::sigmoid(y);
  if (activation == "gelu") return torch::gelu(y);
  return y;
}

SentencePooling SentencePooling::from_directory(const fs::path& dir, int64_t hidden_size) {
  SentencePooling p;
  const auto modules_file = dir / "modules.json";
  if (!fs::exists(modules_file)) return p;
  p.from_sentence_transformers = true;
  const auto modules = read_json_file(modules_file);
  if (!modules.is_array() || modules.empty())
    throw Error(fmt::format("{}: expected a non-empty list of modules", modules_file.string()));
  // Transformer, Pooling, Dense*, Normalize?: the order sentence-transformers runs them in.
  const std::vector<std::string> order = {"Transformer", "Pooling", "Dense", "Normalize"};
  int64_t stage = -1;
  int64_t features = hidden_size;
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto& m = modules[i];
    if (!m.is_object())
      throw Error(fmt::format("{}: module {} is not an object", modules_file.string(), i));
    const auto type = class_name(m.value("type", std::string()));
    const auto path = m.value("path", std::string());
    const auto at = std::find(order.begin(), order.end(), type);
    const auto pos = static_cast<int64_t>(at - order.begin());
    const bool in_order = pos > stage || (pos == stage && type == "Dense");
    if (at == order.end() || !in_order || (i == 0) != (pos == 0))
      throw Error(fmt::format("{}: module {} '{}' is not supported here (headprune runs "
                              "Transformer, Pooling, Dense..., Normalize, in that order)",
                              modules_file.string(), i, m.value("type", std::string())));
    stage = pos;
    if (type == "Transformer") {
      if (!path.empty())
        throw Error(fmt::format("{}: the Transformer module must be the folder itself (path \"\")",
                                modules_file.string()));
      p.max_seq_length = read_transformer_config(dir);
    } else if (type == "Pooling") {
      p.modes = read_pooling(dir, path, hidden_size);
      features = static_cast<int64_t>(p.modes.size()) * hidden_size;
    } else if (type == "Dense") {
      p.dense.push_back(read_dense(dir, path, features));
      features = p.dense.back().weight.size(0);
    } else {
      check_normalize(dir, path);
      p.normalize = true;
    }
  }
  if (stage < 1)
    throw Error(fmt::format("{}: no Pooling module follows the Transformer", modules_file.string()));
  return p;
}

torch::Tensor SentencePooling::embed(const torch::Tensor& hidden_states,
                                     const torch::Tensor& attention_mask) const {
  const auto hidden = hidden_states.to(torch::kFloat);  // a bfloat16 model's pooling sums in float32
  auto m = attention_mask.to(hidden.dtype()).unsqueeze(-1);  // [B, T, 1]
  std::vector<torch::Tensor> parts;
  for (auto mode : modes) {
    switch (mode) {
      case Mode::kCls:
        parts.push_back(hidden.select(1, 0));
        break;
      case Mode::kMax:
        parts.push_back(hidden.masked_fill(m == 0, -1e9).amax(1));
        break;
      case Mode::kMean:
      case Mode::kMeanSqrtLen: {
        auto counts = m.sum(1).clamp_min(1e-9);  // [B, 1]
        auto sum = (hidden * m).sum(1);
        parts.push_back(mode == Mode::kMean ? sum / counts : sum / counts.sqrt());
        break;
      }
    }
  }
  auto pooled = parts.size() == 1 ? parts.front() : torch::cat(parts, 1);
  for (const auto& d : dense) pooled = d.forward(pooled);
  if (normalize)
    pooled = torch::nn::functional::normalize(
        pooled, torch::nn::functional::NormalizeFuncOptions().p(2).dim(1).eps(1e-12));
  return pooled;
}

int64_t SentencePooling::embedding_size(int64_t hidden_size) const {
  return dense.empty() ? static_cast<int64_t>(modes.size()) * hidden_size : dense.back().weight.size(0);
}

std::string SentencePooling::describe() const {
  const char* names[] = {"cls", "max", "mean", "mean_sqrt_len"};
  std::vector<std::string> parts;
  for (auto mode : modes) parts.push_back(names[static_cast<int>(mode)]);
  for (const auto& d : dense)
    parts.push_back(fmt::format("dense({}->{},{})", d.weight.size(1), d.weight.size(0), d.activation));
  if (normalize) parts.push_back("normalize");
  return fmt::format("{}", fmt::join(parts, "+"));
}

}  // namespace headprune::models
