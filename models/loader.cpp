#include "models/loader.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/formats/llama2c.h"
#include "models/gguf_model.h"
#include "models/input_file.h"
#include "models/linear.h"
#include "models/registry.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/gguf_tokenizer.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "models/tokenizer/tokenizer_from_json.h"
#include "models/tokenizer/unigram_tokenizer.h"
#include "models/tokenizer/wordpiece.h"

namespace headprune::models {
namespace {


/// The tensors of a `<Family>For*` file (every encoder key under `layout`'s prefix, e.g.
/// "roberta.") renamed to the encoder's own names; other files' tensors as they are.
/// @returns the names that had the prefix (without it); empty when none had.
/// @throws headprune::Error if a name is in the file both with and without the prefix.
std::set<std::string> strip_encoder_prefix(TensorMap& weights, const std::optional<ClassificationLayout>& layout,
                                           const std::filesystem::path& file) {
  std::set<std::string> stripped;
  if (!layout) return stripped;
  const auto& prefix = layout->encoder_prefix;
  TensorMap out;
  for (auto& [key, tensor] : weights) {
    const bool prefixed = key.rfind(prefix, 0) == 0;
    const auto name = prefixed ? key.substr(prefix.size()) : key;
    if (!out.emplace(name, tensor).second)
      throw Error(fmt::format("{}: tensor '{}' is there both with and without the '{}' prefix", file.string(), name,
                              prefix));
    if (prefixed) stripped.insert(name);
  }
  weights = std::move(out);
  return stripped;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string parent_module(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot);
}

/// The dtype in the file of each floating-point weight the model loaded, by parameter name.
std::map<std::string, torch::ScalarType> source_dtypes(const torch::nn::Module& model,
                                                       const TensorMap& weights) {
  std::map<std::string, torch::ScalarType> out;
  std::set<std::string> params;
  for (const auto& p : model.named_parameters(true)) params.insert(p.key());
  for (const auto& [key, t] : weights)
    if (params.count(key) && t.is_floating_point()) out[key] = t.scalar_type();
  return out;
}

/// Refuses an unused tensor that sits in a module the model has (e.g. an `o_proj.bias` when
/// the config says attention_bias false): the model would compute without it, and carrying
/// it through surgery unchanged would write a stale tensor.
void check_unused_outside_model(const torch::nn::Module& model, const std::vector<std::string>& unused,
                                const std::filesystem::path& dir) {
  std::set<std::string> modules;
  for (const auto& p : model.named_parameters(true)) modules.insert(parent_module(p.key()));
  for (const auto& key : unused) {
    if (modules.count(parent_module(key)))
      throw Error(fmt::format("{}: tensor '{}' belongs to module '{}', which the config describes "
                              "without it (check attention_bias / mlp_bias and similar keys in "
                              "config.json)",
                              (dir / "model.safetensors").string(), key, parent_module(key)));
  }
}

/// The tokenizer of a checkpoint folder (null when it has none), its tokenizer.json parsed once:
/// by the model type there byte-level BPE or Unigram; else WordPiece (vocab.txt, or a WordPiece
/// tokenizer.json); else llama2.c's tokenizer.bin. @throws headprune::Error for a malformed file.
std::shared_ptr<Tokenizer> folder_tokenizer(const std::filesystem::path& dir, const ModelConfig& config) {
  const auto json_file = dir / kTokenizerJsonFile, config_file = dir / "tokenizer_config.json";
  const auto tokenizer_json =
      std::filesystem::is_regular_file(json_file) ? read_json_file(json_file) : nlohmann::json();
  const auto tokenizer_config =
      std::filesystem::is_regular_file(config_file) ? read_json_file(config_file) : nlohmann::json();
  if (!tokenizer_json.is_null())
    if (auto tokenizer = tokenizer_from_json(tokenizer_json, tokenizer_config, config, json_file)) return tokenizer;
  if (WordPieceTokenizer::present_in(dir))
    return std::make_shared<WordPieceTokenizer>(WordPieceTokenizer::from_directory(dir, tokenizer_json));
  if (std::filesystem::exists(dir / kLlama2cTokenizerFile))
    return std::make_shared<Llama2cTokenizer>(Llama2cTokenizer::from_file(dir / kLlama2cTokenizerFile, config.vocab_size));
  return nullptr;
}

/// The classifier head of a `<Family>ForSequenceClassification` file (`weights` already
/// without the encoder prefix): num_labels from out_proj's rows, names from id2label; its
/// tensors are taken off `unused`. @throws headprune::Error for a missing or misshapen tensor.
SequenceClassificationHead load_classifier(const ClassificationLayout& layout, const ModelConfig& config,
                                           const TensorMap& weights, const std::filesystem::path& file,
                                           std::vector<std::string>& unused) {
  const auto& out = weights.at(layout.out_proj + ".weight");
  const auto num_labels = out.dim() == 2 ? out.size(0) : 0;
  SequenceClassificationHead head(layout, config.hidden_size, label_names(config, num_labels));
  TensorMap tensors;
  for (const auto& p : head->named_parameters(true))
    if (weights.count(p.key())) tensors[p.key()] = weights.at(p.key());
  load_weights(*head, tensors, file.string());
  unused.erase(std::remove_if(unused.begin(), unused.end(), [&](const std::string& k) { return tensors.count(k) > 0; }),
               unused.end());
  return head;
}

/// Refuses a checkpoint with a head (`has_head`) whose config.json `architectures` does not name
/// the head class its family reads (ModelFamily::head_class), or headprune's remote-code class
/// for it ("Headprune" + that name, as transformers writes when it saves a loaded export): a token
/// classifier's or a question-answering head's tensors can look like a sequence classifier's.
void check_head_class(const ModelConfig& config, bool has_head, const std::filesystem::path& dir) {
  const auto expected = config.family().head_class(config);
  const auto names = config.raw.value("architectures", nlohmann::json());
  if (!has_head || !expected || !names.is_array() || names.empty()) return;
  for (const auto& name : {*expected, "Headprune" + *expected})
    if (std::find(names.begin(), names.end(), name) != names.end()) return;
  const bool encoder = config.family().classification_layout(config).has_value();
  throw Error(fmt::format("{}: architectures {} is not a class headprune models: for model_type '{}' it reads {}{}",
                          (dir / "config.json").string(), names.dump(), config.model_type, *expected,
                          encoder ? " heads and bare encoders; to prune the encoder without its head, save it "
                                    "alone (transformers: AutoModel.from_pretrained(folder).save_pretrained(new_folder))"
                                  : " checkpoints"));
}

/// The architecture config.json names (models/registry.h), with random weights shaped by its
/// kept heads.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config, const TensorMap& weights) {
  std::set<std::string> names;
  for (const auto& entry : weights) names.insert(entry.first);
  const ScopedUnfilledWeights unfilled;  // load_weights sets every parameter (a missing one is an error)
  return models::make_model(config, names);
}

/// The parameters load_weights may leave in the file's dtype under `storage`.
std::set<std::string> kept_narrow(const AttentionModel& model, WeightStorage storage) {
  return storage == WeightStorage::source ? model.narrow_storage_weights() : std::set<std::string>();
}

/// A checkpoint converted in memory from a single file (llama2.c .bin, GGUF): HF config and
/// HF-named weights.
Checkpoint converted_checkpoint(const std::filesystem::path& file, const ModelConfig& config,
                                const TensorMap& weights, const torch::Device& device, WeightStorage storage) {
  Checkpoint ckpt;
  ckpt.dir = file;
  auto model = make_model(config, weights);
  const auto file_weights = model->weights_from_file(weights, file.string());
  ckpt.unused_keys = load_weights(*model, file_weights, file.string(), kept_narrow(*model, storage));
  ckpt.source_dtypes = source_dtypes(*model, file_weights);
  model->to(device);
  model->eval();
  ckpt.model = model;
  ckpt.max_seq_length = config.max_position_embeddings;
  return ckpt;
}

/// A llama2.c `.bin` checkpoint, converted in memory (see models/formats/llama2c.h).
Checkpoint load_llama2c_checkpoint(const std::filesystem::path& file, const torch::Device& device,
                                   WeightStorage storage) {
  const auto converted = read_llama2c(file);
  return converted_checkpoint(file, read_config(converted.config_json, file.string()), converted.weights, device,
                              storage);
}

/// A llama.cpp GGUF file, converted in memory by its architecture's mapping (models/gguf_model.h).
Checkpoint load_gguf_checkpoint(const std::filesystem::path& file, const torch::Device& device,
                                WeightStorage storage) {
  const auto converted = read_gguf_model(file);
  auto ckpt = converted_checkpoint(file, converted.config, converted.weights, device, storage);
  std::shared_ptr<BpeTokenizer> tokenizer;
  // A vocabulary headprune cannot read leaves the checkpoint without a tokenizer: commands that
  // need text refuse (require_tokenizer_files says why), the model itself loads.
  if (has_gguf_tokenizer(converted.gguf) && unsupported_gguf_tokenizer(converted.gguf).empty())
    tokenizer = gguf_tokenizer(converted.gguf);
  ckpt.tokenizer = tokenizer;
  ckpt.implied_files = gguf_tokenizer_files(converted.gguf, tokenizer);
  ckpt.chat_template = gguf_chat_template(converted.gguf);
  return ckpt;
}

/// The chat template of a checkpoint folder: chat_template.jinja (transformers 5's file), else
/// tokenizer_config.json's `chat_template` string; "" when neither is there.
/// @throws headprune::Error for a chat_template that is not one string (named templates).
std::string folder_chat_template(const std::filesystem::path& dir) {
  if (std::filesystem::is_regular_file(dir / "chat_template.jinja"))
    return read_input_file(dir / "chat_template.jinja", "chat template");
  const auto config_file = dir / "tokenizer_config.json";
  if (!std::filesystem::is_regular_file(config_file)) return "";
  const auto config = read_json_file(config_file);
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return "";
  if (!config["chat_template"].is_string())
    throw Error(fmt::format("{}: chat_template is not one template string (named templates are not "
                            "supported)", config_file.string()));
  return config["chat_template"].get<std::string>();
}

}  // namespace

Checkpoint load_checkpoint(const std::filesystem::path& dir, const torch::Device& device, WeightStorage storage) {
  if (std::filesystem::is_regular_file(dir) && dir.extension() == ".bin")
    return load_llama2c_checkpoint(dir, device, storage);
  if (std::filesystem::is_regular_file(dir) && dir.extension() == ".gguf")
    return load_gguf_checkpoint(dir, device, storage);
  if (!std::filesystem::is_directory(dir))
    throw Error(fmt::format("{} is not a folder: give a checkpoint folder holding config.json "
                            "and model.safetensors (or a llama2.c .bin or llama.cpp .gguf file)",
                            dir.string()));
  Checkpoint ckpt;
  ckpt.dir = dir;
  auto config = read_config_file(dir);
  auto weights = load_checkpoint_weights(dir);
  const auto layout = config.family().classification_layout(config);
  const auto prefixed = strip_encoder_prefix(weights, layout, dir / "model.safetensors");
  check_head_class(config, !layout || !prefixed.empty() || weights.count(layout->out_proj + ".weight"), dir);
  auto model = make_model(config, weights);
  weights = model->weights_from_file(std::move(weights), (dir / "model.safetensors").string());
  ckpt.unused_keys = load_weights(*model, weights, (dir / "model.safetensors").string(), kept_narrow(*model, storage));
  ckpt.source_dtypes = source_dtypes(*model, weights);
  // position_ids is a constant buffer HF writes: carried through like any unused tensor (so
  // that sizes compare like with like), but not worth a warning.
  const auto position_ids = std::find_if(ckpt.unused_keys.begin(), ckpt.unused_keys.end(),
      [](const std::string& k) { return ends_with(k, "embeddings.position_ids"); });
  // Tensors carried through keep their names in the file (a task file's encoder prefix too).
  const auto file_name = [&](const std::string& key) { return prefixed.count(key) ? layout->encoder_prefix + key : key; };
  if (position_ids != ckpt.unused_keys.end()) {
    ckpt.passthrough[file_name(*position_ids)] = weights.at(*position_ids);
    ckpt.unused_keys.erase(position_ids);
  }
  if (layout && weights.count(layout->out_proj + ".weight")) {
    ckpt.classifier = load_classifier(*layout, config, weights, dir / "model.safetensors", ckpt.unused_keys);
    ckpt.classifier->to(device);
    ckpt.classifier->eval();
  } else if (!prefixed.empty()) {
    throw Error(fmt::format("{}: the encoder's tensors are under '{}' as in a {}, but there is no "
                            "{}.weight: headprune reads sequence-classification heads and bare "
                            "encoders; save the task model's encoder alone (transformers: "
                            "AutoModel.from_pretrained(folder).save_pretrained(new_folder))",
                            (dir / "model.safetensors").string(), layout->encoder_prefix, layout->architecture,
                            layout->out_proj));
  }
  check_unused_outside_model(*model, ckpt.unused_keys, dir);
  for (auto& key : ckpt.unused_keys) {
    ckpt.passthrough[file_name(key)] = weights.at(key);
    key = file_name(key);
  }
  model->to(device);
  model->eval();
  ckpt.model = model;
  ckpt.tokenizer = folder_tokenizer(dir, config);
  const auto wordpiece = std::dynamic_pointer_cast<WordPieceTokenizer>(ckpt.tokenizer);
  ckpt.chat_template = folder_chat_template(dir);
  ckpt.pooling = SentencePooling::from_directory(dir, config.hidden_size);
  // Longest input: sentence-transformers' max_seq_length; else, in a sentence-transformers
  // folder, the tokenizer's model_max_length (as sentence-transformers 3 and 6 both do); both
  // capped by the positions the table serves (RoBERTa / MPNet: 2 fewer than its rows).
  const int64_t positions = config.usable_positions();
  ckpt.max_seq_length = positions;
  if (ckpt.pooling.max_seq_length > 0)
    ckpt.max_seq_length = std::min(ckpt.pooling.max_seq_length, positions);
  else if (ckpt.pooling.from_sentence_transformers && wordpiece)
    ckpt.max_seq_length = static_cast<int64_t>(
        std::min<std::size_t>(static_cast<std::size_t>(positions), wordpiece->options().model_max_length));
  return ckpt;
}

Checkpoint copy_checkpoint(const Checkpoint& source) {
  const auto& from = *source.model;
  std::set<std::string> narrow;  // parameters held narrower than float32 stay so (WeightStorage::source)
  for (const auto& p : from.named_parameters(true))
    if (p.value().is_floating_point() && p.value().element_size() < 4) narrow.insert(p.key());
  auto weights = from.weights_to_file(state_dict(from));
  for (auto& entry : weights) entry.second = entry.second.clone();
  auto model = make_model(from.config(), weights);
  const auto what = "a copy of " + source.dir.string();
  load_weights(*model, model->weights_from_file(std::move(weights), what), what, narrow);
  const auto parameters = from.parameters();
  if (!parameters.empty()) model->to(parameters.front().device());
  model->eval();
  auto copy = source;
  copy.model = model;
  return copy;
}

void require_tokenizer_files(const std::filesystem::path& dir, const std::string& command) {
  if (WordPieceTokenizer::present_in(dir) || std::filesystem::is_regular_file(dir / kLlama2cTokenizerFile))
    return;
  if (std::filesystem::is_regular_file(dir) && dir.extension() == ".gguf") {
    const auto gguf = read_gguf(dir);
    if (const auto why = unsupported_gguf_tokenizer(gguf); !why.empty())
      throw Error(fmt::format("{}: {}; {} needs the model's tokenizer", dir.string(), why, command));
    if (has_gguf_tokenizer(gguf)) return;
  }
  throw Error(fmt::format("{} has no tokenizer (vocab.txt, tokenizer.json with a WordPiece, BPE or Unigram "
                          "model, llama2.c tokenizer.bin, or tokenizer.ggml.* in a GGUF file; "
                          "convert a llama2.c .bin with convert-llama2c --tokenizer): {} needs the "
                          "model's tokenizer",
                          dir.string(), command));
}

}  // namespace headprune::models
