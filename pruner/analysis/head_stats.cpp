#include "pruner/analysis/head_stats.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::pruner {
namespace {

torch::Tensor mask_tensor(const std::vector<bool>& flags) {
  std::vector<float> v(flags.begin(), flags.end());
  return torch::tensor(v);
}

std::vector<int64_t> query_positions(const AnalysisSentence& s) {
  std::vector<int64_t> q;
  for (size_t i = 0; i < s.ids.size(); ++i)
    if (!s.special[i]) q.push_back(static_cast<int64_t>(i));
  return q;
}

/// Per query position, the nearest earlier punctuation token, or -1.
std::vector<int64_t> previous_punctuation(const AnalysisSentence& s, const std::vector<int64_t>& queries) {
  std::vector<int64_t> out;
  for (auto i : queries) {
    int64_t p = -1;
    for (int64_t j = i - 1; j >= 0 && p < 0; --j)
      if (s.punctuation[j] && !s.special[j]) p = j;
    out.push_back(p);
  }
  return out;
}

/// Word-level attention (Clark et al. 2019, sec. 4.1): summed over a key word's tokens,
/// averaged over the query word's tokens. a: [h, T, T] -> [h, words, words].
torch::Tensor word_attention(const AnalysisSentence& s, const torch::Tensor& a) {
  const auto words = static_cast<int64_t>(s.governor.size());
  const auto T = static_cast<int64_t>(s.ids.size());
  auto to_word = torch::zeros({T, words});
  for (int64_t t = 0; t < T; ++t)
    if (s.word_of_token[t] >= 0) to_word[t][s.word_of_token[t]] = 1.0f;
  const auto count = to_word.sum(0).clamp_min(1.0f);
  const auto average = (to_word / count).t();  // [words, T]
  return torch::matmul(torch::matmul(average, a), to_word);
}

/// Word attentions closer than this count as a tie: far above float32 rounding of sums of at
/// most a few hundred probabilities (~1e-7 each), far below attention a head gives on purpose.
constexpr float kWordTie = 1e-5f;

/// Most-attended other word of each word (self excluded; words without tokens never win), or
/// -1 where no word clearly wins (a head attending only to special tokens gives every word
/// the same near-zero attention: argmax would then pick by index, not by the head).
torch::Tensor best_other_word(const torch::Tensor& word_att, const std::vector<bool>& has_tokens) {
  const auto words = word_att.size(1);
  if (words < 2) return torch::full({word_att.size(0), words}, -1, torch::kLong);
  auto scores = word_att.clone();
  auto blocked = torch::eye(words, torch::kBool);
  for (int64_t w = 0; w < words; ++w)
    if (!has_tokens[w]) blocked.select(1, w).fill_(true);
  scores.masked_fill_(blocked.unsqueeze(0), -1.0f);
  const auto [top, index] = scores.topk(2, -1);  // [h, words, 2]
  const auto first = top.select(-1, 0);
  const auto clear = (first >= 0) & (first - top.select(-1, 1) > kWordTie);
  return index.select(-1, 0).masked_fill(clear.logical_not(), -1);
}

}  // namespace

std::pair<int64_t, double> HeadStats::best_offset() const {
  const auto it = std::max_element(offset_hits.begin(), offset_hits.end());
  const auto offset = static_cast<int64_t>(it - offset_hits.begin()) - kMaxTrackedOffset;
  return {offset, queries ? static_cast<double>(*it) / queries : 0.0};
}

double HeadStats::previous_punctuation_share() const {
  return previous_punctuation_queries ? static_cast<double>(previous_punctuation_hits) / previous_punctuation_queries
                                      : 0.0;
}

double HeadStats::rare_share() const {
  return rare_sentences ? static_cast<double>(rare_hits) / rare_sentences : 0.0;
}

double HeadStats::delimiter_mass() const { return std::max(0.0, mean(special_mass) - mean(first_mass)); }

HeadStatsAccumulator::HeadStatsAccumulator(std::vector<int64_t> heads_per_layer) {
  for (auto n : heads_per_layer) stats_.emplace_back(static_cast<size_t>(n));
}

void HeadStatsAccumulator::count_tokens(const std::vector<AnalysisSentence>& sentences) {
  for (const auto& s : sentences)
    for (size_t i = 0; i < s.ids.size(); ++i)
      if (!s.special[i]) ++frequency_[s.ids[i]];
}

/// The sentence's least frequent token id among its non-special tokens, or -1 when several
/// ids share the lowest count (no single rarest token).
int64_t HeadStatsAccumulator::rarest_token(const AnalysisSentence& s, const std::vector<int64_t>& queries) const {
  std::map<int64_t, int64_t> seen;
  for (auto q : queries) seen[s.ids[q]] = frequency_.count(s.ids[q]) ? frequency_.at(s.ids[q]) : 0;
  int64_t best = std::numeric_limits<int64_t>::max(), rare = -1, ties = 0;
  for (const auto& [id, f] : seen) {
    if (f < best) best = f, rare = id, ties = 1;
    else if (f == best) ++ties;
  }
  return ties == 1 ? rare : -1;
}

void HeadStatsAccumulator::count_offsets(const SentenceView& v) {
  const auto& s = *v.sentence;
  for (size_t w = 0; w < s.governor.size(); ++w) {
    const auto g = s.governor[w];
    if (g < 0 || !v.has_tokens[w] || !v.has_tokens[g]) continue;
    ++offsets_[0][s.relation[w]][g - static_cast<int64_t>(w)].hits;
    ++offsets_[1][s.relation[w]][static_cast<int64_t>(w) - g].hits;
  }
  baselines_[0].clear();
  baselines_[1].clear();
}

void HeadStatsAccumulator::add(const AnalysisSentence& s, const std::vector<torch::Tensor>& attentions) {
  if (attentions.size() != stats_.size())
    throw Error(fmt::format("attention of {} layers given, the model has {}", attentions.size(), stats_.size()));
  SentenceView v;
  v.sentence = &s;
  v.queries = query_positions(s);
  if (v.queries.empty()) return;
  v.punct_before = previous_punctuation(s, v.queries);
  v.rare_id = rarest_token(s, v.queries);
  v.has_tokens.assign(s.governor.size(), false);
  for (auto w : s.word_of_token)
    if (w >= 0) v.has_tokens[w] = true;
  if (!s.governor.empty()) count_offsets(v);
  for (size_t l = 0; l < attentions.size(); ++l) add_layer(v, attentions[l], l);
}

void HeadStatsAccumulator::add_layer(const SentenceView& v, const torch::Tensor& attention, size_t layer) {
  const auto& s = *v.sentence;
  const auto T = static_cast<int64_t>(s.ids.size());
  const auto heads = static_cast<int64_t>(stats_[layer].size());
  if (attention.dim() != 3 || attention.size(0) != heads || attention.size(1) != T || attention.size(2) != T)
    throw Error(fmt::format("layer {}: attention of shape [{}] for {} heads and {} tokens", layer,
                            fmt::join(attention.sizes(), ","), heads, T));
  if (heads == 0) return;
  const auto a = attention.to(torch::kFloat);
  const auto aq = a.index_select(1, torch::tensor(v.queries));  // [h, nq, T]
  const auto sums = torch::stack({std::get<0>(aq.max(-1)).sum(1), -(aq * aq.clamp_min(1e-12f).log()).sum({1, 2}),
                                  aq.select(2, 0).sum(1), (aq * mask_tensor(s.special)).sum({1, 2}),
                                  (aq * mask_tensor(s.punctuation)).sum({1, 2})}).to(torch::kDouble);
  const auto argmax = aq.argmax(-1);                 // [h, nq]
  const auto most_attended = aq.mean(1).argmax(-1);  // [h]
  const auto best_word = s.governor.empty() ? torch::zeros({heads, 0}, torch::kLong)
                                            : best_other_word(word_attention(s, a), v.has_tokens);
  const auto am = argmax.accessor<int64_t, 2>();
  const auto sum = sums.accessor<double, 2>();
  const auto top = most_attended.accessor<int64_t, 1>();
  const auto bw = best_word.accessor<int64_t, 2>();
  for (int64_t h = 0; h < heads; ++h) {
    auto& st = stats_[layer][h];
    st.queries += static_cast<int64_t>(v.queries.size());
    for (size_t i = 0; i < v.queries.size(); ++i) {
      const auto offset = am[h][i] - v.queries[i];
      if (std::abs(offset) <= kMaxTrackedOffset) ++st.offset_hits[offset + kMaxTrackedOffset];
      if (v.punct_before[i] < 0) continue;
      ++st.previous_punctuation_queries;
      if (am[h][i] == v.punct_before[i]) ++st.previous_punctuation_hits;
    }
    st.max_weight += sum[0][h];
    st.entropy += sum[1][h];
    st.first_mass += sum[2][h];
    st.special_mass += sum[3][h];
    st.punctuation_mass += sum[4][h];
    if (v.rare_id >= 0) {
      ++st.rare_sentences;
      if (s.ids[top[h]] == v.rare_id) ++st.rare_hits;
    }
    for (size_t w = 0; w < s.governor.size(); ++w) {
      const auto g = s.governor[w];
      if (g < 0 || !v.has_tokens[w] || !v.has_tokens[g]) continue;
      auto& up = st.to_governor[s.relation[w]];
      ++up.total;
      up.hits += bw[h][static_cast<int64_t>(w)] == g;
      auto& down = st.to_dependent[s.relation[w]];
      ++down.total;
      down.hits += bw[h][g] == static_cast<int64_t>(w);
    }
  }
}

const std::map<std::string, OffsetBaseline>& HeadStatsAccumulator::baselines(bool to_governor) const {
  const int dir = to_governor ? 0 : 1;
  auto& out = baselines_[dir];
  if (!out.empty() || offsets_[dir].empty()) return out;
  for (const auto& [relation, by_offset] : offsets_[dir]) {
    OffsetBaseline best;
    for (const auto& [offset, score] : by_offset) {
      best.score.total += score.hits;
      if (score.hits > best.score.hits) best.offset = offset, best.score.hits = score.hits;
    }
    out[relation] = best;
  }
  return out;
}

}  // namespace headprune::pruner
