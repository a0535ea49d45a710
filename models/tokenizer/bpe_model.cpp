#include "models/tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace bpe_model_impl {

/// One symbol of a word being merged (a doubly linked list over a vector; len 0 = merged away).
struct Symbol {
  int64_t id;
  int64_t prev, next;
  std::size_t len;  ///< bytes of the word it covers
};

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
                   const std::string& source)
    : vocab_(std::move(vocab)), merges_(std::move(merges)), ignore_merges_(ignore_merges) {
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
}

void BpeModel::encode_word(const std::string& word, std::vector<int64_t>& out) const {
  using bpe_model_impl::Candidate;
  using bpe_model_impl::Symbol;
  if (ignore_merges_) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (std::size_t pos = 0; pos < word.size();) {
    const auto len = std::min(bpe_model_impl::utf8_length(static_cast<unsigned char>(word[pos])), word.size() - pos);
    const auto it = vocab_.find(word.substr(pos, len));
    if (it != vocab_.end()) {
      const auto index = static_cast<int64_t>(symbols.size());
      symbols.push_back(Symbol{it->second, index - 1, index + 1, len});
    }
    pos += len;
  }
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

}  // namespace headprune::models
