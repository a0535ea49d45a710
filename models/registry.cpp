#include "models/registry.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/bert/bert_family.h"
#include "models/config.h"
#include "models/distilbert/distilbert_family.h"
#include "models/errors.h"
#include "models/gemma3/gemma3_family.h"
#include "models/json_get.h"
#include "models/llama/llama_family.h"
#include "models/mistral/mistral_family.h"
#include "models/modernbert/modernbert_family.h"
#include "models/mpnet/mpnet_family.h"
#include "models/phi3/phi3_family.h"
#include "models/qwen2/qwen2_family.h"
#include "models/qwen3/qwen3_family.h"
#include "models/roberta/roberta_family.h"
#ifndef HEADPRUNE_NO_TORCH
#include "models/gguf_codec.h"
#endif

// The parser-only build (fuzz harnesses) has no LibTorch, hence no model classes.
#ifdef HEADPRUNE_NO_TORCH
#define HEADPRUNE_FACTORY(f) nullptr
#else
#define HEADPRUNE_FACTORY(f) &f
#endif

namespace headprune::models {
namespace {

/// A family's GGUF mapping (models/gguf_codec.h), for families that have one.
using GgufCodecGetter = const GgufCodec& (*)();

struct Entry {
  const ModelFamily& family;
  ModelFactory make_model;
  GgufCodecGetter gguf_codec;  ///< nullptr: no GGUF mapping
};

/// One line per family.
const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {bert::family(), HEADPRUNE_FACTORY(bert::make_model), nullptr},
      {distilbert::family(), HEADPRUNE_FACTORY(distilbert::make_model), nullptr},
      {mpnet::family(), HEADPRUNE_FACTORY(mpnet::make_model), nullptr},
      {roberta::family(), HEADPRUNE_FACTORY(bert::make_model), nullptr},
      {roberta::xlm_family(), HEADPRUNE_FACTORY(bert::make_model), nullptr},
      {modernbert::family(), HEADPRUNE_FACTORY(modernbert::make_model), nullptr},
      {llama::family(), HEADPRUNE_FACTORY(llama::make_model), HEADPRUNE_FACTORY(llama::gguf_codec)},
      {qwen2::family(), HEADPRUNE_FACTORY(llama::make_model), HEADPRUNE_FACTORY(qwen2::gguf_codec)},
      {qwen3::family(), HEADPRUNE_FACTORY(llama::make_model), HEADPRUNE_FACTORY(qwen3::gguf_codec)},
      // llama.cpp's converter writes Mistral as `llama` (the window is refused there).
      {mistral::family(), HEADPRUNE_FACTORY(llama::make_model), HEADPRUNE_FACTORY(llama::gguf_codec)},
      {phi3::family(), HEADPRUNE_FACTORY(llama::make_model), HEADPRUNE_FACTORY(phi3::gguf_codec)},
      {gemma3::family(), HEADPRUNE_FACTORY(llama::make_model), HEADPRUNE_FACTORY(gemma3::gguf_codec)},
  };
  return entries;
}

const Entry& entry_of(const std::string& model_type) {
  for (const auto& entry : registry())
    if (entry.family.model_type() == model_type) return entry;
  throw Error(fmt::format("model_type '{}' is not supported (supported: {})", model_type,
                          fmt::join(supported_model_types(), ", ")));
}

}  // namespace

const ModelFamily& family_of(const std::string& model_type) { return entry_of(model_type).family; }

ModelConfig read_config(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object", source));
  const auto model_type = json_required<std::string>(j, "model_type", source);
  const ModelFamily* family = nullptr;
  try {
    family = &family_of(model_type);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source, e.what()));
  }
  return ModelConfig::from_json(j, *family, source);
}

ModelConfig read_config_file(const std::filesystem::path& dir) {
  const auto file = dir / "config.json";
  if (!std::filesystem::exists(file))
    throw Error(fmt::format("{} has no config.json: is it a Hugging Face checkpoint folder?", dir.string()));
  return read_config(read_json_file(file), file.string());
}

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const auto& entry : registry()) out.push_back(entry.family.model_type());
  return out;
}

const GgufCodec* gguf_codec_of(const std::string& model_type) {
  const auto getter = entry_of(model_type).gguf_codec;
  return getter ? &getter() : nullptr;
}

#ifdef HEADPRUNE_NO_TORCH
const GgufCodec* gguf_codec_for_architecture(const std::string&) { return nullptr; }
std::vector<std::string> supported_gguf_architectures() { return {}; }
#else
const GgufCodec* gguf_codec_for_architecture(const std::string& architecture) {
  for (const auto& entry : registry()) {
    if (!entry.gguf_codec) continue;
    const auto names = entry.gguf_codec().architectures();
    if (std::find(names.begin(), names.end(), architecture) != names.end()) return &entry.gguf_codec();
  }
  return nullptr;
}

std::vector<std::string> supported_gguf_architectures() {
  std::vector<std::string> out;
  for (const auto& entry : registry())
    if (entry.gguf_codec)
      for (const auto& name : entry.gguf_codec().architectures())
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);  // codecs may be shared
  return out;
}
#endif

std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names) {
  const auto& entry = entry_of(config.model_type);
  if (!entry.make_model) throw std::logic_error("this build has no model classes (no LibTorch)");
  return entry.make_model(config, weight_names);
}

}  // namespace headprune::models
