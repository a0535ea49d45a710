#include "pruner/analysis/head_analysis.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>
#include <utf8proc.h>

#include "models/errors.h"
#include "pruner/analysis/head_importance.h"
#include "pruner/log.h"
#include "pruner/text/corpus.h"

namespace headprune::pruner {
namespace {

/// Whether a vocabulary entry is only Unicode punctuation (categories P*), after WordPiece's
/// "##" or SentencePiece's "▁" prefix.
bool is_punctuation(std::string text) {
  if (text.rfind("##", 0) == 0) text.erase(0, 2);
  if (text.rfind("\xE2\x96\x81", 0) == 0) text.erase(0, 3);
  if (text.empty()) return false;
  const auto* data = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  for (utf8proc_ssize_t pos = 0, size = static_cast<utf8proc_ssize_t>(text.size()); pos < size;) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(data + pos, size - pos, &cp);
    if (n <= 0) return false;
    const auto category = utf8proc_category(cp);
    if (category < UTF8PROC_CATEGORY_PC || category > UTF8PROC_CATEGORY_PO) return false;
    pos += n;
  }
  return true;
}

/// Fills `special` and `punctuation` of a sentence from its ids.
void mark_tokens(const models::Tokenizer& tokenizer, AnalysisSentence& s) {
  for (auto id : s.ids) {
    s.special.push_back(tokenizer.is_special(id));
    s.punctuation.push_back(!s.special.back() && is_punctuation(tokenizer.token_text(id)));
  }
}

/// The special tokens the tokenizer puts before and after any text: encode("") split where
/// encode(word) inserts the word's pieces.
std::pair<std::vector<int64_t>, std::vector<int64_t>> special_frame(const models::Tokenizer& tokenizer,
                                                                     const std::vector<int64_t>& word_ids) {
  const auto empty = tokenizer.encode("", 1 << 20);
  size_t prefix = 0;
  while (prefix < empty.size() && prefix < word_ids.size() && empty[prefix] == word_ids[prefix]) ++prefix;
  return {{empty.begin(), empty.begin() + static_cast<std::ptrdiff_t>(prefix)},
          {empty.begin() + static_cast<std::ptrdiff_t>(prefix), empty.end()}};
}

/// A word's own pieces: encode(word) without the frame.
std::vector<int64_t> word_pieces(const models::Tokenizer& tokenizer, const std::string& word,
                                 const std::pair<std::vector<int64_t>, std::vector<int64_t>>& frame) {
  const auto ids = tokenizer.encode(word, 1 << 20);
  const auto& [before, after] = frame;
  const bool framed = ids.size() >= before.size() + after.size() &&
                      std::equal(before.begin(), before.end(), ids.begin()) &&
                      std::equal(after.rbegin(), after.rend(), ids.rbegin());
  if (!framed)
    throw Error(fmt::format("the tokenizer does not put the same special tokens around the word '{}' as "
                            "around other text; its sentences cannot be split into words",
                            word));
  return {ids.begin() + static_cast<std::ptrdiff_t>(before.size()),
          ids.end() - static_cast<std::ptrdiff_t>(after.size())};
}

AnalysisSentence conllu_sentence(const models::Tokenizer& tokenizer, const ConlluSentence& c,
                                 const std::pair<std::vector<int64_t>, std::vector<int64_t>>& frame) {
  AnalysisSentence s;
  s.ids = frame.first;
  s.word_of_token.assign(frame.first.size(), -1);
  for (size_t w = 0; w < c.words.size(); ++w) {
    for (auto id : word_pieces(tokenizer, c.words[w].form, frame)) {
      s.ids.push_back(id);
      s.word_of_token.push_back(static_cast<int64_t>(w));
    }
    s.governor.push_back(c.words[w].head - 1);
    s.relation.push_back(c.words[w].relation);
  }
  s.ids.insert(s.ids.end(), frame.second.begin(), frame.second.end());
  s.word_of_token.resize(s.ids.size(), -1);
  mark_tokens(tokenizer, s);
  return s;
}

/// The rows of one batch that belong to sentence `row`: per layer [heads, n, n].
std::vector<torch::Tensor> sentence_attention(const std::vector<torch::Tensor>& batch, int64_t row, int64_t n) {
  std::vector<torch::Tensor> out;
  for (const auto& layer : batch) out.push_back(layer[row].narrow(1, 0, n).narrow(2, 0, n).cpu());
  return out;
}

void check_gates(const GateState& gates, const models::ModelConfig& config) {
  bool same = static_cast<int64_t>(gates.layers.size()) == config.num_hidden_layers;
  for (size_t l = 0; same && l < gates.layers.size(); ++l) same = gates.layers[l].heads == config.kept_heads[l];
  if (!same)
    throw Error("--gates were trained on heads this model does not have (another model, or one "
                "pruned since); give the model the gates were trained on");
}

/// Turns a model's attention recording on for its lifetime.
class AttentionRecording {
 public:
  explicit AttentionRecording(models::AttentionModel& model) : model_(model) { model_.set_output_attentions(true); }
  ~AttentionRecording() { model_.set_output_attentions(false); }
  AttentionRecording(const AttentionRecording&) = delete;
  AttentionRecording& operator=(const AttentionRecording&) = delete;

 private:
  models::AttentionModel& model_;
};

/// Every head's statistics over `input`, one batch of similar lengths at a time.
HeadStatsAccumulator attention_statistics(const models::Checkpoint& ckpt, const AnalysisInput& input,
                                          const AnalysisOptions& options) {
  HeadStatsAccumulator stats(ckpt.model->config().heads_per_layer());
  stats.count_tokens(input.sentences);
  std::vector<std::vector<int64_t>> ids;
  for (const auto& s : input.sentences) ids.push_back(s.ids);
  torch::NoGradGuard no_grad;
  AttentionRecording recording(*ckpt.model);
  const auto buckets = length_buckets(ids, options.batch_size);
  for (size_t b = 0; b < buckets.size(); ++b) {
    const auto in = make_inputs(ids, buckets[b], ckpt.tokenizer->pad_id(), options.device);
    const auto out = ckpt.model->forward(in, nullptr);
    for (size_t r = 0; r < buckets[b].size(); ++r) {
      const auto& s = input.sentences[buckets[b][r]];
      stats.add(s, sentence_attention(out.attentions, static_cast<int64_t>(r), static_cast<int64_t>(s.ids.size())));
    }
    if ((b + 1) % 20 == 0 || b + 1 == buckets.size())
      log::info("heads: attention {}/{} batches ({} sentences)", b + 1, buckets.size(), input.sentences.size());
  }
  return stats;
}

std::vector<std::vector<double>> effective_ranks(const models::AttentionModel& model) {
  std::vector<std::vector<double>> out;
  for (int64_t l = 0; l < model.config().num_hidden_layers; ++l) {
    const auto w = model.query_key_weights(l);
    out.emplace_back();
    for (int64_t h = 0; h < w.query.size(0); ++h) out.back().push_back(effective_rank(w.query[h], w.key[h]));
  }
  return out;
}

}  // namespace

AnalysisInput sentences_from_text(const models::Tokenizer& tokenizer, const std::vector<std::string>& lines,
                                  std::size_t max_length) {
  std::vector<std::vector<int64_t>> ids;
  for (const auto& line : lines)
    if (line.find_first_not_of(" \t\r") != std::string::npos) ids.push_back(tokenizer.encode(line, max_length));
  return sentences_from_ids(tokenizer, ids);
}

AnalysisInput sentences_from_ids(const models::Tokenizer& tokenizer, const std::vector<std::vector<int64_t>>& ids) {
  AnalysisInput input;
  for (const auto& sequence : ids) {
    AnalysisSentence s;
    s.ids = sequence;
    s.word_of_token.assign(s.ids.size(), -1);
    mark_tokens(tokenizer, s);
    input.sentences.push_back(std::move(s));
  }
  return input;
}

AnalysisInput sentences_from_conllu(const models::Tokenizer& tokenizer, const std::vector<ConlluSentence>& sentences,
                                    std::size_t max_length, const std::string& source) {
  AnalysisInput input;
  if (sentences.empty()) return input;
  const auto frame = special_frame(tokenizer, tokenizer.encode(sentences.front().words.front().form, 1 << 20));
  for (const auto& c : sentences) {
    auto s = conllu_sentence(tokenizer, c, frame);
    if (s.ids.size() > max_length) {
      if (input.too_long++ == 0) input.first_too_long = fmt::format("{}:{}", source, c.line);
      continue;
    }
    input.sentences.push_back(std::move(s));
  }
  return input;
}

void append_treebank(AnalysisInput& input, const models::Tokenizer& tokenizer, const std::filesystem::path& conllu,
                     std::size_t max_length) {
  auto treebank = sentences_from_conllu(tokenizer, read_conllu(conllu), max_length, conllu.string());
  if (treebank.too_long > 0)
    log::warn("{} CoNLL-U sentence(s) have more than {} tokens and were left out (the first at {})",
              treebank.too_long, max_length, treebank.first_too_long);
  input.too_long += treebank.too_long;
  if (input.first_too_long.empty()) input.first_too_long = treebank.first_too_long;
  input.sentences.insert(input.sentences.end(), std::make_move_iterator(treebank.sentences.begin()),
                         std::make_move_iterator(treebank.sentences.end()));
}

HeadAnalysis analyze_heads(models::Checkpoint& ckpt, const AnalysisInput& input, const AnalysisOptions& options,
                           std::optional<GateState> gates) {
  if (input.sentences.empty()) throw Error("no sentences to analyse");
  auto& model = *ckpt.model;
  if (gates) check_gates(*gates, model.config());
  const auto t0 = std::chrono::steady_clock::now();
  HeadAnalysis result;
  const auto& config = model.config();
  result.num_attention_heads = config.original_num_attention_heads;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l)
    result.kept_heads.push_back(config.original_ids(l, config.kept_heads[static_cast<size_t>(l)]));
  result.gates = std::move(gates);
  result.stats = attention_statistics(ckpt, input, options);
  for (const auto& s : input.sentences) result.tokens += static_cast<int64_t>(s.ids.size());
  result.sentences = static_cast<int64_t>(input.sentences.size());
  result.effective_rank = effective_ranks(model);
  for (const auto& layer : result.stats->heads()) {
    result.roles.emplace_back();
    for (const auto& head : layer) result.roles.back().push_back(head_roles(head, *result.stats));
  }
  if (options.importance_sentences > 0) {
    const auto n = std::min(options.importance_sentences, input.sentences.size());
    std::vector<std::vector<int64_t>> ids;
    for (size_t i = 0; i < n; ++i) ids.push_back(input.sentences[i].ids);
    result.importance = ablation_importance(ckpt, ids, options.batch_size, options.device);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace headprune::pruner
