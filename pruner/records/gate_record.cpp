#include "pruner/records/gate_record.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "pruner/atomic_write.h"

namespace headprune::pruner {

nlohmann::json ModelFingerprint::to_json() const {
  return {{"model_type", model_type},           {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads}, {"hidden_size", hidden_size},
          {"kept_heads", kept_heads},           {"weights_checksum", weights_checksum}};
}

ModelFingerprint ModelFingerprint::from_json(const nlohmann::json& j) {
  ModelFingerprint f;
  f.model_type = j.at("model_type").get<std::string>();
  f.num_hidden_layers = models::json_integer(j.at("num_hidden_layers"), "num_hidden_layers");
  f.num_attention_heads = models::json_integer(j.at("num_attention_heads"), "num_attention_heads");
  f.hidden_size = models::json_integer(j.at("hidden_size"), "hidden_size");
  f.kept_heads = models::json_integer_lists(j.at("kept_heads"), "kept_heads");
  f.weights_checksum = j.at("weights_checksum").get<double>();
  return f;
}

std::string ModelFingerprint::difference(const ModelFingerprint& o) const {
  if (model_type != o.model_type || num_hidden_layers != o.num_hidden_layers ||
      num_attention_heads != o.num_attention_heads || hidden_size != o.hidden_size)
    return fmt::format("the gates are for a {} with {} layers x {} heads, width {}; this model is "
                       "a {} with {} layers x {} heads, width {}",
                       model_type, num_hidden_layers, num_attention_heads, hidden_size,
                       o.model_type, o.num_hidden_layers, o.num_attention_heads, o.hidden_size);
  if (kept_heads != o.kept_heads) return "the two models hold different heads per layer";
  if (std::abs(weights_checksum - o.weights_checksum) > 1e-7 * std::abs(weights_checksum))
    return fmt::format("the weights differ (checksum {:.6f} vs {:.6f})", weights_checksum,
                       o.weights_checksum);
  return "";
}

std::vector<int64_t> LayerGates::kept() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < heads.size(); ++i)
    if (keep[i]) out.push_back(heads[i]);
  return out;
}

std::vector<int64_t> LayerGates::removed_local() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < heads.size(); ++i)
    if (!keep[i]) out.push_back(static_cast<int64_t>(i));
  return out;
}

int64_t FfnLayerGates::kept_width() const {
  return block * static_cast<int64_t>(std::count(keep.begin(), keep.end(), true));
}

std::vector<int64_t> FfnLayerGates::removed_neurons() const {
  std::vector<int64_t> out;
  for (size_t b = 0; b < keep.size(); ++b)
    if (!keep[b])
      for (int64_t i = 0; i < block; ++i) out.push_back(static_cast<int64_t>(b) * block + i);
  return out;
}

std::vector<double> FfnLayerGates::neuron_gates() const {
  std::vector<double> out;
  for (auto g : gate) out.insert(out.end(), static_cast<size_t>(block), g);
  return out;
}

namespace {

nlohmann::json ffn_to_json(const std::vector<FfnLayerGates>& ffn) {
  auto list = nlohmann::json::array();
  for (size_t l = 0; l < ffn.size(); ++l) {
    const auto& g = ffn[l];
    list.push_back({{"layer", l}, {"width", g.width}, {"block", g.block}, {"log_alpha", g.log_alpha},
                    {"gate", g.gate}, {"keep", g.keep}, {"kept_width", g.kept_width()}});
  }
  return list;
}

/// The `ffn` list of a gates file (absent: none). @throws Error naming the layer at fault.
std::vector<FfnLayerGates> ffn_from_json(const nlohmann::json& j, int64_t layers, const std::string& source) {
  std::vector<FfnLayerGates> out;
  if (!j.contains("ffn") || j.at("ffn").is_null()) return out;
  for (const auto& l : j.at("ffn")) {
    const auto what = fmt::format("{}: ffn layer {}", source, out.size());
    FfnLayerGates g;
    g.width = models::json_integer(l.at("width"), what + " width");
    g.block = models::json_integer(l.at("block"), what + " block");
    g.log_alpha = l.at("log_alpha").get<std::vector<double>>();
    g.gate = l.at("gate").get<std::vector<double>>();
    g.keep = l.at("keep").get<std::vector<bool>>();
    const auto blocks = static_cast<int64_t>(g.keep.size());
    if (g.block < 1 || g.width != g.block * blocks || g.log_alpha.size() != g.keep.size() ||
        g.gate.size() != g.keep.size())
      throw Error(fmt::format("{} has width {} in blocks of {}, but {} log_alpha, {} gate and {} keep values", what,
                              g.width, g.block, g.log_alpha.size(), g.gate.size(), g.keep.size()));
    out.push_back(std::move(g));
  }
  if (static_cast<int64_t>(out.size()) != layers)
    throw Error(fmt::format("{}: {} ffn layers listed, the model has {}", source, out.size(), layers));
  return out;
}

}  // namespace

int64_t GateState::heads_total() const {
  int64_t n = 0;
  for (const auto& l : layers) n += static_cast<int64_t>(l.heads.size());
  return n;
}

int64_t GateState::heads_kept() const {
  int64_t n = 0;
  for (const auto& l : layers) n += static_cast<int64_t>(l.kept().size());
  return n;
}

nlohmann::json GateState::to_json() const {
  nlohmann::json layer_list = nlohmann::json::array();
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& g = layers[l];
    layer_list.push_back({{"layer", l},
                          {"heads", g.heads},
                          {"log_alpha", g.log_alpha},
                          {"gate", g.gate},
                          {"keep", g.keep},
                          {"kept", g.kept()}});
  }
  nlohmann::json j = {{"format", "headprune-gates"},
          {"format_version", ffn.empty() ? 1 : kFormatVersion},
          {"headprune_version", HEADPRUNE_VERSION},
          {"complete", complete},
          {"step", step},
          {"model_path", model_path},
          {"model", model.to_json()},
          {"trained_model", trained_model ? trained_model->to_json() : nlohmann::json()},
          {"weights_file", trained_model ? nlohmann::json(kWeightsFile) : nlohmann::json()},
          {"heads_total", heads_total()},
          {"heads_kept", heads_kept()},
          {"settings", settings},
          {"summary", summary},
          {"layers", layer_list}};
  if (!ffn.empty()) j["ffn"] = ffn_to_json(ffn);
  return j;
}

GateState GateState::from_json(const nlohmann::json& j, const std::string& source) {
  try {
    if (j.value("format", std::string()) != "headprune-gates")
      throw Error(fmt::format("{} is not a headprune gates file (no \"format\": "
                              "\"headprune-gates\")",
                              source));
    const auto version = models::json_integer(j.at("format_version"), source + ": format_version");
    if (version > kFormatVersion)
      throw Error(fmt::format("{} was written by a newer headprune (format {}); upgrade", source,
                              version));
    GateState s;
    s.model = ModelFingerprint::from_json(j.at("model"));
    s.model_path = j.value("model_path", std::string());
    if (j.contains("trained_model") && !j.at("trained_model").is_null())
      s.trained_model = ModelFingerprint::from_json(j.at("trained_model"));
    s.settings = j.value("settings", nlohmann::json::object());
    s.summary = j.value("summary", nlohmann::json::object());
    s.step = j.contains("step") ? models::json_integer(j.at("step"), source + ": step") : 0;
    s.complete = j.value("complete", false);
    for (const auto& l : j.at("layers")) {
      LayerGates g;
      g.heads = models::json_integer_list(l.at("heads"), fmt::format("{}: layer {} heads", source, s.layers.size()));
      g.log_alpha = l.at("log_alpha").get<std::vector<double>>();
      g.gate = l.at("gate").get<std::vector<double>>();
      g.keep = l.at("keep").get<std::vector<bool>>();
      if (g.log_alpha.size() != g.heads.size() || g.gate.size() != g.heads.size() ||
          g.keep.size() != g.heads.size())
        throw Error(fmt::format("{}: layer {} lists {} heads but {} log_alpha, {} gate and {} "
                                "keep values",
                                source, s.layers.size(), g.heads.size(), g.log_alpha.size(),
                                g.gate.size(), g.keep.size()));
      for (auto h : g.heads)
        if (h < 0 || h >= s.model.num_attention_heads)
          throw Error(fmt::format("{}: layer {} names head {}, but the model has {} heads per "
                                  "layer",
                                  source, s.layers.size(), h, s.model.num_attention_heads));
      s.layers.push_back(std::move(g));
    }
    if (static_cast<int64_t>(s.layers.size()) != s.model.num_hidden_layers)
      throw Error(fmt::format("{}: {} layers listed, the model has {}", source, s.layers.size(),
                              s.model.num_hidden_layers));
    s.ffn = ffn_from_json(j, s.model.num_hidden_layers, source);
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{} is malformed: {}", source, e.what()));
  }
}

void GateState::save(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  write_file_atomic(dir / "gates.json", to_json().dump(1) + "\n");
}

GateState GateState::load(const std::filesystem::path& dir) {
  const auto file = dir / "gates.json";
  if (!std::filesystem::exists(file))
    throw Error(fmt::format("{} has no gates.json: give the folder `headprune train-gates --out` "
                            "wrote",
                            dir.string()));
  return from_json(models::read_json_file(file), file.string());
}

}  // namespace headprune::pruner
