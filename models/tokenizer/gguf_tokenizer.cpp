#include "models/tokenizer/gguf_tokenizer.h"

#include <set>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

const GgufValue* find_typed(const GgufFile& f, const std::string& key, GgufValueType type,
                            GgufValueType array_type = GgufValueType::UINT32) {
  const auto* v = f.header.find(key);
  if (!v) return nullptr;
  if (v->type != type || (type == GgufValueType::ARRAY && v->array_type != array_type))
    gguf_error(f.path, fmt::format("metadata '{}' has an unexpected type (type {})", key,
                                   static_cast<uint32_t>(v->type)));
  return v;
}

template <typename T>
std::vector<T> array_or_empty(const GgufFile& f, const std::string& key, GgufValueType element) {
  const auto* v = find_typed(f, key, GgufValueType::ARRAY, element);
  return v ? v->value.get<std::vector<T>>() : std::vector<T>{};
}

int64_t id_or(const GgufFile& f, const std::string& key) {
  const auto* v = f.header.find(key);
  if (!v) return -1;
  if (!v->value.is_number_integer()) gguf_error(f.path, fmt::format("metadata '{}' must be an integer id", key));
  return v->value.get<int64_t>();
}

bool flag_or(const GgufFile& f, const std::string& key, bool fallback) {
  const auto* v = find_typed(f, key, GgufValueType::BOOL);
  return v ? v->value.get<bool>() : fallback;
}

/// The tokenizer keys read here; any other `tokenizer.*` key is refused.
const std::set<std::string>& known_keys() {
  static const std::set<std::string> keys{
      "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
      "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
      "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
      "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.add_sep_token",
      "tokenizer.chat_template",
      // SentencePiece scores: transformers orders Gemma's merges by file position, not by them.
      "tokenizer.ggml.scores"};
  return keys;
}

/// general.architecture, or "" when absent.
std::string gguf_architecture(const GgufFile& f) {
  const auto* v = find_typed(f, "general.architecture", GgufValueType::STRING);
  return v ? v->value.get<std::string>() : std::string();
}

}  // namespace

bool has_gguf_tokenizer(const GgufFile& gguf) { return gguf.header.find("tokenizer.ggml.model") != nullptr; }

std::string unsupported_gguf_tokenizer(const GgufFile& gguf) {
  const auto* model = find_typed(gguf, "tokenizer.ggml.model", GgufValueType::STRING);
  if (!model || model->value.get<std::string>() == "gpt2") return "";
  const auto architecture = gguf_architecture(gguf);
  if (model->value.get<std::string>() == "llama" && is_gemma_sentencepiece(architecture)) return "";
  return fmt::format("its tokenizer (tokenizer.ggml.model '{}' of architecture '{}') is not read (byte-level "
                     "BPE 'gpt2', and Gemma's SentencePiece 'llama', only)",
                     model->value.get<std::string>(), architecture);
}

GgufVocabulary read_gguf_vocabulary(const GgufFile& gguf) {
  for (const auto& entry : gguf.header.metadata)
    if (entry.first.rfind("tokenizer.", 0) == 0 && !known_keys().count(entry.first))
      gguf_error(gguf.path, fmt::format("tokenizer metadata '{}' is not modelled here", entry.first));
  GgufVocabulary v;
  const auto* model = find_typed(gguf, "tokenizer.ggml.model", GgufValueType::STRING);
  if (!model) gguf_error(gguf.path, "has no tokenizer (tokenizer.ggml.model is missing)");
  v.model = model->value.get<std::string>();
  v.architecture = gguf_architecture(gguf);
  if (const auto* pre = find_typed(gguf, "tokenizer.ggml.pre", GgufValueType::STRING))
    v.pre = pre->value.get<std::string>();
  v.tokens = array_or_empty<std::string>(gguf, "tokenizer.ggml.tokens", GgufValueType::STRING);
  v.token_types = array_or_empty<int32_t>(gguf, "tokenizer.ggml.token_type", GgufValueType::INT32);
  v.merges = array_or_empty<std::string>(gguf, "tokenizer.ggml.merges", GgufValueType::STRING);
  if (v.tokens.empty()) gguf_error(gguf.path, "tokenizer.ggml.tokens is missing or empty");
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size())
    gguf_error(gguf.path, fmt::format("tokenizer.ggml.token_type has {} entries for {} tokens",
                                      v.token_types.size(), v.tokens.size()));
  v.bos_id = id_or(gguf, "tokenizer.ggml.bos_token_id");
  v.eos_id = id_or(gguf, "tokenizer.ggml.eos_token_id");
  v.unk_id = id_or(gguf, "tokenizer.ggml.unknown_token_id");
  v.pad_id = id_or(gguf, "tokenizer.ggml.padding_token_id");
  v.add_bos = flag_or(gguf, "tokenizer.ggml.add_bos_token", false);
  v.add_bos_given = gguf.header.find("tokenizer.ggml.add_bos_token") != nullptr;
  if (flag_or(gguf, "tokenizer.ggml.add_sep_token", false))
    gguf_error(gguf.path, "tokenizer.ggml.add_sep_token is true: a separator token is not modelled here");
  v.add_eos = flag_or(gguf, "tokenizer.ggml.add_eos_token", false);
  if (flag_or(gguf, "tokenizer.ggml.add_space_prefix", false))
    gguf_error(gguf.path, "tokenizer.ggml.add_space_prefix is true: a prefix space is not modelled here");
  return v;
}

std::shared_ptr<BpeTokenizer> gguf_tokenizer(const GgufFile& gguf) {
  const auto vocabulary = read_gguf_vocabulary(gguf);  // its errors name the file already
  try {
    return std::make_shared<BpeTokenizer>(BpeTokenizer::from_gguf(vocabulary));
  } catch (const Error& e) {
    gguf_error(gguf.path, e.what());
  }
}

std::string gguf_chat_template(const GgufFile& gguf) {
  const auto* t = find_typed(gguf, "tokenizer.chat_template", GgufValueType::STRING);
  return t ? t->value.get<std::string>() : std::string();
}

std::map<std::string, std::string> gguf_tokenizer_files(const GgufFile& gguf,
                                                        const std::shared_ptr<BpeTokenizer>& tokenizer) {
  if (!tokenizer) return {};
  auto config = tokenizer->to_tokenizer_config_json();
  if (const auto chat = gguf_chat_template(gguf); !chat.empty()) config["chat_template"] = chat;
  return {{kTokenizerJsonFile, tokenizer->to_tokenizer_json().dump(2) + "\n"},
          {"tokenizer_config.json", config.dump(2) + "\n"}};
}

}  // namespace headprune::models
