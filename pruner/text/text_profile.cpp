#include "pruner/text/text_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <utf8proc.h>

namespace headprune::pruner {

namespace {

double share(std::size_t part, std::size_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

double median_length(const std::vector<std::vector<int64_t>>& sequences) {
  if (sequences.empty()) return 0;
  std::vector<std::size_t> lengths;
  lengths.reserve(sequences.size());
  for (const auto& s : sequences) lengths.push_back(s.size());
  std::sort(lengths.begin(), lengths.end());
  const auto n = lengths.size();
  return n % 2 ? static_cast<double>(lengths[n / 2])
               : 0.5 * static_cast<double>(lengths[n / 2 - 1] + lengths[n / 2]);
}

/// Letters (Unicode category L*) among the non-space characters; invalid UTF-8 ends the count
/// of that document (the corpus reader has already refused such files).
double letters_among_visible(const std::vector<std::string>& texts) {
  std::size_t letters = 0, visible = 0;
  for (const auto& text : texts) {
    const auto* data = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    const auto size = static_cast<utf8proc_ssize_t>(text.size());
    for (utf8proc_ssize_t pos = 0; pos < size;) {
      utf8proc_int32_t cp = 0;
      const auto n = utf8proc_iterate(data + pos, size - pos, &cp);
      if (n <= 0) break;
      pos += n;
      const auto category = utf8proc_category(cp);
      if (category == UTF8PROC_CATEGORY_ZS || category == UTF8PROC_CATEGORY_CC) continue;
      ++visible;
      letters += category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO;
    }
  }
  return visible == 0 ? std::numeric_limits<double>::quiet_NaN() : share(letters, visible);
}

}  // namespace

TextProfile profile_text(const std::vector<std::vector<int64_t>>& train,
                         const std::vector<std::string>& heldout_text, std::size_t documents,
                         const models::Tokenizer& tokenizer, std::size_t max_length) {
  TextProfile p;
  p.documents = documents;
  p.train_sequences = train.size();
  std::size_t truncated = 0, inner = 0, inner_special = 0;
  for (const auto& s : train) {
    p.train_tokens += s.size();
    truncated += s.size() >= max_length;
    // The ends hold the tokens the tokenizer adds; what lies between came from the text.
    for (std::size_t i = 1; i + 1 < s.size(); ++i) {
      ++inner;
      inner_special += tokenizer.is_special(s[i]);
    }
  }
  p.median_tokens = median_length(train);
  p.truncated_share = share(truncated, train.size());
  p.unknown_share = share(inner_special, inner);
  p.distinct_share = train.empty() ? 1.0 : share(std::set<std::vector<int64_t>>(train.begin(), train.end()).size(),
                                                 train.size());
  p.letter_share = letters_among_visible(heldout_text);
  return p;
}

std::vector<std::string> text_warnings(const TextProfile& p, const TextLimits& limits) {
  std::vector<std::string> w;
  if (p.train_sequences < limits.min_train_sequences)
    w.push_back(fmt::format("the calibration text is short: {} training sequences (at least {} advised); the gates "
                            "will fit this text rather than the model's use of language: give more text",
                            p.train_sequences, limits.min_train_sequences));
  if (p.median_tokens < limits.min_median_tokens)
    w.push_back(fmt::format("the calibration documents are very short: median {:g} tokens (at least {:g} advised), "
                            "as in a word list; whole sentences, one per line, did better (docs/results.md, "
                            "\"Which calibration text?\")",
                            p.median_tokens, limits.min_median_tokens));
  if (p.unknown_share > limits.max_unknown_share)
    w.push_back(fmt::format("{:.1f}% of the calibration tokens are unknown to the tokenizer (at most {:g}% "
                            "advised): the text is largely outside the model's vocabulary (another script?)",
                            100 * p.unknown_share, 100 * limits.max_unknown_share));
  if (p.letter_share < limits.min_letter_share)  // false for NaN: no held-out text, nothing to say
    w.push_back(fmt::format("only {:.0f}% of the calibration text's characters are letters (at least {:.0f}% "
                            "advised): it looks like code, numbers or tables, not sentences",
                            100 * p.letter_share, 100 * limits.min_letter_share));
  if (p.distinct_share < limits.min_distinct_share)
    w.push_back(fmt::format("{:.0f}% of the calibration sequences are repeats: the gates see less text than it "
                            "seems; remove the duplicates",
                            100 * (1 - p.distinct_share)));
  return w;
}

nlohmann::json TextProfile::to_json() const {
  nlohmann::json j{{"documents", documents},
                   {"train_sequences", train_sequences},
                   {"train_tokens", train_tokens},
                   {"median_tokens", median_tokens},
                   {"truncated_share", truncated_share},
                   {"unknown_share", unknown_share},
                   {"distinct_share", distinct_share},
                   {"warnings", text_warnings(*this)}};
  j["letter_share"] = std::isnan(letter_share) ? nlohmann::json() : nlohmann::json(letter_share);
  return j;
}

std::string TextProfile::describe() const {
  return fmt::format("{} documents, {} training sequences ({} tokens, median {:g}, {:.0f}% cut at the length "
                     "limit), {:.2f}% unknown tokens, {:.0f}% letters, {:.0f}% distinct",
                     documents, train_sequences, train_tokens, median_tokens, 100 * truncated_share,
                     100 * unknown_share, 100 * letter_share, 100 * distinct_share);
}

}  // namespace headprune::pruner
