// The tokenizer stored in a GGUF file's metadata (`tokenizer.ggml.*`, `tokenizer.chat_template`),
// as a headprune Tokenizer and as the HF files (tokenizer.json, tokenizer_config.json) that
// convert-gguf writes. Keys: ggml's docs/gguf.md, "Tokenizer".
#pragma once

#include <map>
#include <memory>
#include <string>

#include "models/formats/gguf.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace headprune::models {

/// The vocabulary keys of `gguf` (tokenizer.ggml.model, pre, tokens, token_type, merges, special
/// ids, add_bos_token / add_eos_token).
/// @throws headprune::Error naming the file and key: a tokenizer key this reader does not model
///         (e.g. add_space_prefix true for a BPE vocabulary), a value of the wrong type, or token
///         arrays of different lengths.
GgufVocabulary read_gguf_vocabulary(const GgufFile& gguf);

/// Whether `gguf` carries a tokenizer (tokenizer.ggml.model is present).
bool has_gguf_tokenizer(const GgufFile& gguf);

/// Why headprune cannot read `gguf`'s tokenizer, or "" when it can (byte-level BPE "gpt2", or
/// SentencePiece "llama" of a Gemma architecture) or there is none: other SentencePiece
/// vocabularies (LLaMA 2's dummy prefix, Phi-3's) and other models are not read.
std::string unsupported_gguf_tokenizer(const GgufFile& gguf);

/// The file's tokenizer (tokenizer.ggml.model "gpt2", or Gemma's "llama").
/// @throws headprune::Error as read_gguf_vocabulary and BpeTokenizer::from_gguf do
///         (another tokenizer model, an unknown pre-tokenizer name).
std::shared_ptr<BpeTokenizer> gguf_tokenizer(const GgufFile& gguf);

/// The chat template (Jinja text) in `tokenizer.chat_template`, or "" when there is none.
std::string gguf_chat_template(const GgufFile& gguf);

/// File name -> content of the HF tokenizer files equivalent to the file's tokenizer:
/// tokenizer.json and tokenizer_config.json (BpeTokenizer::to_tokenizer_config_json
/// plus the chat_template). Empty when the file has no tokenizer.
/// `tokenizer` is gguf_tokenizer(gguf), built once by the caller (null when there is none).
std::map<std::string, std::string> gguf_tokenizer_files(const GgufFile& gguf,
                                                        const std::shared_ptr<BpeTokenizer>& tokenizer);

}  // namespace headprune::models
