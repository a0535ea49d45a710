#include "models/tokenizer/unigram_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

/// HF tokenizers `unigram::model::K_UNK_PENALTY`: an unknown character scores this far below
/// the vocabulary's lowest score.
constexpr double kUnkPenalty = 10.0;

/// Length in bytes of the UTF-8 character starting with `lead` (valid UTF-8 assumed).
std::size_t char_length(unsigned char lead) {
  if (lead < 0x80U) return 1;
  if (lead < 0xE0U) return 2;
  if (lead < 0xF0U) return 3;
  return 4;
}

/// One Viterbi lattice end position: the best path's score up to it and its last piece.
struct BestPath {
  double score = 0.0;
  std::size_t starts_at = 0;
  int64_t id = -1;  ///< -1: not reached yet
};

}  // namespace

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> vocab, std::optional<int64_t> unk_id,
                           const std::string& source)
    : pieces_(std::move(vocab)), unk_id_(unk_id), source_(source) {
  if (pieces_.empty()) throw Error(fmt::format("{}: the Unigram vocabulary is empty", source));
  if (unk_id_ && (*unk_id_ < 0 || *unk_id_ >= static_cast<int64_t>(pieces_.size())))
    throw Error(fmt::format("{}: Unigram unk_id {} is outside the vocabulary of {}", source, *unk_id_,
                            pieces_.size()));
  min_score_ = std::numeric_limits<double>::infinity();
  ids_.reserve(pieces_.size());
  for (std::size_t id = 0; id < pieces_.size(); ++id) {
    const auto& [piece, score] = pieces_[id];
    if (piece.empty()) throw Error(fmt::format("{}: Unigram piece {} is empty", source, id));
    if (!std::isfinite(score))
      throw Error(fmt::format("{}: Unigram piece {} ('{}') has a score that is not a finite number", source, id,
                              piece));
    if (!ids_.emplace(piece, static_cast<int64_t>(id)).second)
      throw Error(fmt::format("{}: Unigram piece '{}' appears twice (ids {} and {})", source, piece,
                              ids_.at(piece), id));
    min_score_ = std::min(min_score_, score);
    max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
  }
}

std::optional<int64_t> UnigramModel::token_to_id(std::string_view piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

void UnigramModel::encode(std::string_view word, std::vector<int64_t>& out) const {
  const double unk_score = min_score_ - kUnkPenalty;
  std::vector<BestPath> best(word.size() + 1);
  best[0].id = 0;  // the empty path
  for (std::size_t start = 0; start < word.size();) {
    const auto char_bytes = char_length(static_cast<unsigned char>(word[start]));
    const double here = best[start].score;
    const auto offer = [&](std::size_t end, double score, int64_t id) {
      auto& node = best[end];
      if (node.id < 0 || here + score > node.score) node = {here + score, start, id};
    };
    bool single_char_piece = false;
    const auto longest = std::min(max_piece_bytes_, word.size() - start);
    for (std::size_t n = 1; n <= longest; ++n) {  // shorter pieces first, as HF's trie yields them
      const auto id = token_to_id(word.substr(start, n));
      if (!id) continue;
      offer(start + n, pieces_[static_cast<std::size_t>(*id)].second, *id);
      single_char_piece = single_char_piece || n == char_bytes;
    }
    if (!single_char_piece) {
      if (!unk_id_)
        throw Error(fmt::format("{}: the Unigram vocabulary has no piece for '{}' and no unk_id", source_,
                                std::string(word.substr(start, char_bytes))));
      offer(start + char_bytes, unk_score, *unk_id_);
    }
    start += char_bytes;
  }
  // Back from the end; runs of unknown nodes fuse into one string (HF fuse_unk).
  std::vector<int64_t> reversed;
  std::size_t unk_end = std::string_view::npos;
  const auto flush_unknowns = [&](std::size_t begin) {
    if (unk_end == std::string_view::npos) return;
    reversed.push_back(token_to_id(word.substr(begin, unk_end - begin)).value_or(*unk_id_));
    unk_end = std::string_view::npos;
  };
  std::size_t unk_begin = 0;
  for (std::size_t end = word.size(); end > 0;) {
    const auto& node = best[end];
    if (unk_id_ && node.id == *unk_id_) {
      if (unk_end == std::string_view::npos) unk_end = end;
      unk_begin = node.starts_at;
    } else {
      flush_unknowns(unk_begin);
      reversed.push_back(token_to_id(word.substr(node.starts_at, end - node.starts_at)).value_or(node.id));
    }
    end = node.starts_at;
  }
  flush_unknowns(unk_begin);
  out.insert(out.end(), reversed.rbegin(), reversed.rend());
}

}  // namespace headprune::models
