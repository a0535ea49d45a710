// What each attention head does, measured on real text (`headprune heads`): positional,
// syntactic, rare-token and sink/delimiter behaviour, confidence and entropy.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

namespace headprune::pruner {

/// One analysed sentence as the model saw it (no padding).
struct AnalysisSentence {
  std::vector<int64_t> ids;          ///< token ids, the tokenizer's special tokens included
  std::vector<bool> special;         ///< per token: [CLS]/[SEP]/BOS...
  std::vector<bool> punctuation;     ///< per token: only Unicode punctuation (after ##/▁)
  std::vector<int64_t> word_of_token;  ///< per token: 0-based syntactic word, -1 for none
  std::vector<int64_t> governor;     ///< per word: 0-based governor word, -1 for the root
  std::vector<std::string> relation;  ///< per word: UD relation without subtype
};

/// Relative offsets key − query tracked one by one; farther ones are pooled.
inline constexpr int64_t kMaxTrackedOffset = 8;

/// Counts for one relation in one direction.
struct RelationScore {
  int64_t hits = 0, total = 0;
  double accuracy() const { return total ? static_cast<double>(hits) / total : 0.0; }
};

/// Sums for one head over the analysed sentences; shares and means come from the accessors.
struct HeadStats {
  int64_t queries = 0;  ///< non-special query tokens seen
  /// Queries whose most-attended key lies at offset o (index o + kMaxTrackedOffset).
  std::vector<int64_t> offset_hits = std::vector<int64_t>(2 * kMaxTrackedOffset + 1, 0);
  int64_t previous_punctuation_hits = 0, previous_punctuation_queries = 0;
  double max_weight = 0, entropy = 0;                               ///< summed over queries
  double first_mass = 0, special_mass = 0, punctuation_mass = 0;     ///< summed over queries
  int64_t rare_hits = 0, rare_sentences = 0;
  std::map<std::string, RelationScore> to_governor, to_dependent;  ///< by relation

  /// The tracked offset most queries' argmax lands on, and its share of queries.
  std::pair<int64_t, double> best_offset() const;
  double previous_punctuation_share() const;
  double mean(double sum) const { return queries ? sum / queries : 0.0; }
  double rare_share() const;
  /// Mean attention on special tokens other than the first ([SEP], EOS), never below 0.
  double delimiter_mass() const;
};

/// Best fixed-offset baseline of one relation (Clark et al. 2019, sec. 4.2): the offset
/// governor − dependent that most often holds, and how often.
struct OffsetBaseline {
  int64_t offset = 0;
  RelationScore score;
};

/// Accumulates HeadStats for every head present in a model over batches of sentences.
class HeadStatsAccumulator {
 public:
  /// `heads_per_layer`: heads present in each layer (attentions' second dimension).
  explicit HeadStatsAccumulator(std::vector<int64_t> heads_per_layer);

  /// Token-frequency table for the rare-token statistic (counts over all analysed sentences).
  void count_tokens(const std::vector<AnalysisSentence>& sentences);

  /// Adds one sentence: `attentions[l]` is [heads_l, T, T] (probabilities over keys, float32,
  /// CPU) for this sentence's T tokens.
  /// @throws headprune::Error on a shape that does not match the sentence or the layer.
  void add(const AnalysisSentence& sentence, const std::vector<torch::Tensor>& attentions);

  const std::vector<std::vector<HeadStats>>& heads() const { return stats_; }
  /// Per relation, the fixed-offset baselines (dependent→governor, governor→dependent).
  const std::map<std::string, OffsetBaseline>& baselines(bool to_governor) const;

 private:
  /// What every layer of one sentence shares.
  struct SentenceView {
    const AnalysisSentence* sentence = nullptr;
    std::vector<int64_t> queries;       ///< non-special token positions
    std::vector<int64_t> punct_before;  ///< per query: nearest earlier punctuation, or -1
    int64_t rare_id = -1;               ///< the single rarest token id, or -1
    std::vector<bool> has_tokens;       ///< per word
  };
  int64_t rarest_token(const AnalysisSentence& s, const std::vector<int64_t>& queries) const;
  void count_offsets(const SentenceView& v);
  void add_layer(const SentenceView& v, const torch::Tensor& attention, size_t layer);

  std::vector<std::vector<HeadStats>> stats_;
  std::map<int64_t, int64_t> frequency_;
  std::map<std::string, std::map<int64_t, RelationScore>> offsets_[2];  ///< relation -> offset -> count
  mutable std::map<std::string, OffsetBaseline> baselines_[2];
};

}  // namespace headprune::pruner
