#include "models/tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace bpe_model_impl {

/// A candidate merge in the queue: lowest rank first, then leftmost (HF's `Merge` order).
struct Candidate {
  int32_t rank;
  std::size_t pos;
  int64_t result;
  bool operator<(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;  // inverted: std::priority_queue is a max-heap
  }
};

std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  return 2;
}

}  // namespace bpe_model_impl

BpeModel::BpeModel(std::unordered_map<std::string, int64_t> vocab,
                   std::vector<std::pair<std::string, std::string>> merges, bool ignore_merges,
                   const std::string& source, BpeUnknowns unknowns)
    : vocab_(std::move(vocab)), merges_(std::move(merges)), ignore_merges_(ignore_merges), unknowns_(unknowns) {
  for (const auto& [token, id] : vocab_) {
    if (id < 0 || id > (int64_t{1} << 31))
      throw Error(fmt::format("{}: vocab id {} of '{}' is out of range", source, id, token));
    tokens_[id] = token;
    id_bound_ = std::max(id_bound_, id + 1);
  }
  merge_of_.reserve(merges_.size());
  for (std::size_t rank = 0; rank < merges_.size(); ++rank) {
    const auto& [a, b] = merges_[rank];
    const auto ia = vocab_.find(a), ib = vocab_.find(b), ir = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || ir == vocab_.end())
      throw Error(fmt::format("{}: merge {} '{} {}' uses a token missing from the vocabulary ('{}')",
                              source, rank, a, b,
                              ia == vocab_.end() ? a : ib == vocab_.end() ? b : a + b));
    // The first (lowest-rank) occurrence of a pair wins, as in HF.
    merge_of_.emplace(pair_key(ia->second, ib->second), Merge{static_cast<int32_t>(rank), ir->second});
  }
  if (unknowns_.byte_fallback) {
    byte_ids_.assign(256, -1);
    for (int byte = 0; byte < 256; ++byte)
      if (const auto it = vocab_.find(fmt::format("<0x{:02X}>", byte)); it != vocab_.end()) byte_ids_[byte] = it->second;
  }
}

void BpeModel::append_symbols(const std::string& word, std::vector<Symbol>& symbols) const {
  const auto add = [&](int64_t id, std::size_t len) {
    const auto index = static_cast<int64_t>(symbols.size());
    symbols.push_back(Symbol{id, index - 1, index + 1, len});
  };
  std::size_t unk_len = 0;  // bytes covered by a pending unknown (0: none pending)
  const auto flush_unk = [&] {
    if (unk_len > 0) add(*unknowns_.unk_id, unk_len);
    unk_len = 0;
  };
  for (std::size_t pos = 0; pos < word.size();) {
    const auto len = std::min(bpe_model_impl::utf8_length(static_cast<unsigned char>(word[pos])), word.size() - pos);
    const auto it = vocab_.find(word.substr(pos, len));
    if (it != vocab_.end()) {
      flush_unk();
      add(it->second, len);
    } else if (unknowns_.byte_fallback &&
               std::all_of(word.begin() + static_cast<std::ptrdiff_t>(pos),
                           word.begin() + static_cast<std::ptrdiff_t>(pos + len),
                           [&](char c) { return byte_ids_[static_cast<unsigned char>(c)] >= 0; })) {
      // HF adds the byte tokens without first flushing a pending unknown.
      for (std::size_t i = pos; i < pos + len; ++i) add(byte_ids_[static_cast<unsigned char>(word[i])], 1);
    } else if (unknowns_.unk_id) {
      if (!unknowns_.fuse_unk) flush_unk();
      unk_len += len;
    }
    pos += len;
  }
  flush_unk();
}

void BpeModel::encode_word(const std::string& word, std::vector<int64_t>& out) const {
  using bpe_model_impl::Candidate;
  if (ignore_merges_) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  append_symbols(word, symbols);
  if (!symbols.empty()) symbols.back().next = -1;
  std::priority_queue<Candidate> queue;
  const auto push = [&](std::size_t left) {
    const auto right = symbols[left].next;
    if (right < 0) return;
    const auto it = merge_of_.find(pair_key(symbols[left].id, symbols[static_cast<std::size_t>(right)].id));
    if (it != merge_of_.end())
      queue.push(Candidate{it->second.rank, left, it->second.result});
  };
  for (std::size_t i = 0; i + 1 < symbols.size(); ++i) push(i);
  while (!queue.empty()) {
    const auto top = queue.top();
    queue.pop();
    auto& left = symbols[top.pos];
    if (left.len == 0 || left.next < 0) continue;
    auto& right = symbols[static_cast<std::size_t>(left.next)];
    const auto it = merge_of_.find(pair_key(left.id, right.id));
    if (it == merge_of_.end() || it->second.result != top.result) continue;  // stale entry
    left.id = top.result;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (left.next >= 0) symbols[static_cast<std::size_t>(left.next)].prev = static_cast<int64_t>(top.pos);
    if (left.prev >= 0) push(static_cast<std::size_t>(left.prev));
    push(top.pos);
  }
  for (const auto& symbol : symbols)
    if (symbol.len > 0) out.push_back(symbol.id);
}

std::optional<int64_t> BpeModel::token_to_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int64_t id) const {
  const auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

std::optional<std::pair<std::string, std::string>> split_merge(const std::string& text) {
  const auto space = text.find(' ');
  if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) return std::nullopt;
  return std::make_pair(text.substr(0, space), text.substr(space + 1));
}

std::vector<std::pair<std::string, std::string>> merges_from_scores(const std::vector<std::string>& tokens,
                                                                    const std::vector<double>& scores) {
  if (scores.size() != tokens.size())
    throw Error(fmt::format("{} scores for {} tokens", scores.size(), tokens.size()));
  std::unordered_map<std::string, int64_t> id_of;  // the last id of each token, as a Python dict
  id_of.reserve(tokens.size());
  for (std::size_t id = 0; id < tokens.size(); ++id) id_of[tokens[id]] = static_cast<int64_t>(id);
  struct Candidate {
    std::size_t split;  ///< bytes of the left part
    std::size_t left_chars, right_chars;
    double score;
    std::size_t token;               ///< id whose text is split
    std::pair<int64_t, int64_t> parts;  ///< ids of the left and right parts
  };
  std::vector<Candidate> all;
  std::vector<Candidate> local;
  std::unordered_set<std::string> seen;
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    const auto& token = tokens[id];
    if (!seen.insert(token).second) continue;  // a dict iterates each key once
    const auto last = static_cast<std::size_t>(id_of.at(token));
    local.clear();
    std::size_t chars = 0;
    for (std::size_t pos = 0; pos < token.size();)
      pos += bpe_model_impl::utf8_length(static_cast<unsigned char>(token[pos])), ++chars;
    std::size_t left_chars = 0;
    for (std::size_t pos = 0; pos < token.size();) {
      pos += bpe_model_impl::utf8_length(static_cast<unsigned char>(token[pos]));
      ++left_chars;
      if (pos >= token.size()) break;
      const auto left = id_of.find(token.substr(0, pos)), right = id_of.find(token.substr(pos));
      if (left != id_of.end() && right != id_of.end())
        local.push_back(Candidate{pos, left_chars, chars - left_chars, scores[last], last, {left->second, right->second}});
    }
    std::stable_sort(local.begin(), local.end(),
                     [](const Candidate& a, const Candidate& b) { return a.parts < b.parts; });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
    return a.right_chars > b.right_chars;
  });
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(all.size());
  for (const auto& c : all) merges.emplace_back(tokens[c.token].substr(0, c.split), tokens[c.token].substr(c.split));
  return merges;
}

}  // namespace headprune::models
