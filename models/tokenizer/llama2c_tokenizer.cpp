#include "models/tokenizer/llama2c_tokenizer.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/input_file.h"

namespace headprune::models {

Llama2cTokenizer Llama2cTokenizer::from_file(const std::filesystem::path& file,
                                             int64_t vocab_size) {
  auto in = open_input_file(file, "tokenizer");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return from_bytes(bytes, vocab_size, file.string());
}

Llama2cTokenizer Llama2cTokenizer::from_bytes(const std::string& bytes, int64_t vocab_size,
                                              const std::string& source) {
  std::size_t pos = 0;
  // Every length is checked against the bytes left before anything is allocated.
  auto read = [&](void* dst, std::size_t n, const std::string& what) {
    if (n > bytes.size() - pos)
      throw Error(fmt::format("{}: truncated while reading {} (a llama2.c tokenizer with {} "
                              "tokens was expected)",
                              source, what, vocab_size));
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  };
  Llama2cTokenizer tok;
  int32_t max_len = 0;
  read(&max_len, 4, "max_token_length");
  for (int64_t id = 0; id < vocab_size; ++id) {
    float score = 0;
    int32_t len = 0;
    read(&score, 4, fmt::format("the score of token {}", id));
    read(&len, 4, fmt::format("the length of token {}", id));
    if (len < 0 || len > max_len)
      throw Error(fmt::format("{}: token {} has length {} (max_token_length {})", source, id, len,
                              max_len));
    std::string piece(std::min(static_cast<std::size_t>(len), bytes.size() - pos), '\0');
    read(piece.data(), static_cast<std::size_t>(len), fmt::format("the bytes of token {}", id));
    tok.pieces_.push_back(piece);
    tok.scores_.push_back(score);
    tok.ids_.emplace(piece, id);
  }
  for (int b = 0; b < 256; ++b) {
    const auto id = kFirstByteToken + b;
    if (id >= vocab_size || tok.pieces_[static_cast<std::size_t>(id)] != fmt::format("<0x{:02X}>", b))
      throw Error(fmt::format("{}: token {} should be the byte-fallback piece <0x{:02X}>", source,
                              id, b));
  }
  return tok;
}

namespace {

/// SentencePiece remove_extra_whitespaces: no leading/trailing spaces, runs become one space.
std::string collapse_spaces(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += ch;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::vector<int64_t> Llama2cTokenizer::encode(const std::string& text, std::size_t max_length) const {
  if (max_length < 1) throw Error("max_length must be at least 1");
  auto ids = encode(text, true, false);
  if (ids.size() > max_length) ids.resize(max_length);
  return ids;
}

std::vector<int64_t> Llama2cTokenizer::encode(const std::string& raw, bool bos, bool eos) const {
  const std::string text = remove_extra_whitespaces_ ? collapse_spaces(raw) : raw;
  std::vector<int64_t> tokens;
  if (!text.empty()) {
    auto space = ids_.find(" ");
    if (space != ids_.end()) tokens.push_back(space->second);
  }
  // One UTF-8 character at a time (a lead byte and its continuation bytes, at most 4).
  for (std::size_t i = 0; i < text.size();) {
    std::size_t j = i + 1;
    while (j < text.size() && j - i < 4 && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80)
      ++j;
    auto it = ids_.find(text.substr(i, j - i));
    if (it != ids_.end()) {
      tokens.push_back(it->second);
    } else {
      for (std::size_t k = i; k < j; ++k)
        tokens.push_back(kFirstByteToken + static_cast<unsigned char>(text[k]));
    }
    i = j;
  }
  // Greedy BPE: merge the best-scoring adjacent pair until no pair forms a piece.
  while (true) {
    float best_score = -1e10f;
    int64_t best_id = -1;
    std::size_t best_at = 0;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      auto it = ids_.find(pieces_[tokens[i]] + pieces_[tokens[i + 1]]);
      if (it != ids_.end() && scores_[it->second] > best_score) {
        best_score = scores_[it->second];
        best_id = it->second;
        best_at = i;
      }
    }
    if (best_id < 0) break;
    tokens[best_at] = best_id;
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
  }
  if (bos) tokens.insert(tokens.begin(), kBos);
  if (eos) tokens.push_back(kEos);
  return tokens;
}

std::string Llama2cTokenizer::token_text(int64_t id) const {
  if (id < 0 || id >= vocab_size())
    throw Error(fmt::format("llama2c tokenizer: token id {} is outside the vocabulary (size {})", id,
                            vocab_size()));
  return pieces_[static_cast<std::size_t>(id)];
}

std::string Llama2cTokenizer::decode_token(int64_t prev, int64_t token) const {
  if (token < 0 || token >= vocab_size())
    throw Error(fmt::format("token id {} is outside the vocabulary (0..{})", token,
                            vocab_size() - 1));
  if (token == kBos || token == kEos) return "";
  if (token >= kFirstByteToken && token < kFirstByteToken + 256)
    return std::string(1, static_cast<char>(token - kFirstByteToken));
  const auto& p = pieces_[token];
  if (prev == kBos && !p.empty() && p[0] == ' ') return p.substr(1);
  return p;
}

std::string Llama2cTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  int64_t prev = -1;
  for (auto id : ids) {
    out += decode_token(prev, id);
    prev = id;
  }
  return out;
}

}  // namespace headprune::models
