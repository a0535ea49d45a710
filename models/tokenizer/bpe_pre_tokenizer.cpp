#include "models/tokenizer/bpe_pre_tokenizer.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "models/tokenizer/byte_level.h"

namespace headprune::models {
namespace bpe_pre_tokenizer_impl {

/// Reads a boolean key (absent: `fallback`). @throws Error naming the key if it is not a bool.
bool flag(const nlohmann::json& step, const char* key, bool fallback, const std::string& source) {
  const auto it = step.find(key);
  if (it == step.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw Error(fmt::format("{}: pre_tokenizer {} {} must be true or false, not {}", source,
                            step.value("type", std::string("?")), key, it->dump()));
  return it->get<bool>();
}

PreTokenizerStep split_from_json(const nlohmann::json& step, const std::string& source) {
  const auto behavior = step.value("behavior", std::string());
  if (behavior != "Isolated" && behavior != "MergedWithPrevious")
    throw Error(fmt::format("{}: pre_tokenizer Split behavior '{}' is not supported (Isolated or "
                            "MergedWithPrevious)",
                            source, behavior));
  if (flag(step, "invert", false, source))
    throw Error(fmt::format("{}: pre_tokenizer Split invert true is not supported", source));
  const auto& pattern = step.at("pattern");
  PreTokenizerStep out;
  out.kind = PreTokenizerStep::Kind::kSplit;
  out.merged_with_previous = behavior == "MergedWithPrevious";
  if (pattern.contains("Regex")) {
    out.pattern = pattern.at("Regex").get<std::string>();
  } else if (pattern.contains("String")) {
    out.pattern = pattern.at("String").get<std::string>();
    out.literal = true;
  } else {
    throw Error(fmt::format("{}: pre_tokenizer Split pattern {} is neither Regex nor String", source,
                            pattern.dump()));
  }
  return out;
}

PreTokenizerStep step_from_json(const nlohmann::json& step, const std::string& source) {
  if (!step.is_object())
    throw Error(fmt::format("{}: pre_tokenizer step {} is not an object", source, step.dump()));
  const auto type = step.value("type", std::string());
  if (type == "Split") return split_from_json(step, source);
  if (type == "Digits") return PreTokenizerStep::digits(flag(step, "individual_digits", false, source));
  if (type == "ByteLevel") {
    auto out = PreTokenizerStep::byte_level(flag(step, "add_prefix_space", true, source),
                                            flag(step, "use_regex", true, source));
    out.trim_offsets = flag(step, "trim_offsets", true, source);
    return out;
  }
  throw Error(fmt::format("{}: pre_tokenizer type '{}' is not supported (BPE reads "
                          "ByteLevel, Split, Digits and Sequence)",
                          source, type.empty() ? "none" : type));
}

nlohmann::json step_to_json(const PreTokenizerStep& step) {
  switch (step.kind) {
    case PreTokenizerStep::Kind::kSplit:
      return {{"type", "Split"},
              {"pattern", {{step.literal ? "String" : "Regex", step.pattern}}},
              {"behavior", step.merged_with_previous ? "MergedWithPrevious" : "Isolated"},
              {"invert", false}};
    case PreTokenizerStep::Kind::kDigits:
      return {{"type", "Digits"}, {"individual_digits", step.individual_digits}};
    case PreTokenizerStep::Kind::kByteLevel:
      break;
  }
  return {{"type", "ByteLevel"},
          {"add_prefix_space", step.add_prefix_space},
          {"trim_offsets", step.trim_offsets},
          {"use_regex", step.use_regex}};
}

/// Appends the Isolated split of `piece` by `regex`: matches and the gaps between them.
void split_isolated(const Pcre2Regex& regex, const std::string& piece, std::vector<std::string>& out) {
  std::size_t previous = 0;
  for (const auto& [begin, end] : regex.find_all(piece)) {
    if (begin > previous) out.push_back(piece.substr(previous, begin - previous));
    out.push_back(piece.substr(begin, end - begin));
    previous = end;
  }
  if (previous < piece.size()) out.push_back(piece.substr(previous));
}

/// Appends the MergedWithPrevious split of `piece` by `regex`: each match closes the piece before
/// it (HF `SplitDelimiterBehavior::MergedWithPrevious`; a match right after a match stands alone).
void split_merged_with_previous(const Pcre2Regex& regex, const std::string& piece, std::vector<std::string>& out) {
  std::size_t previous = 0;
  for (const auto& [begin, end] : regex.find_all(piece)) {
    if (end > previous) out.push_back(piece.substr(previous, end - previous));
    previous = end;
  }
  if (previous < piece.size()) out.push_back(piece.substr(previous));
}

}  // namespace bpe_pre_tokenizer_impl

PreTokenizerStep PreTokenizerStep::split(std::string regex) {
  PreTokenizerStep step;
  step.kind = Kind::kSplit;
  step.pattern = std::move(regex);
  return step;
}

PreTokenizerStep PreTokenizerStep::digits(bool individual) {
  PreTokenizerStep step;
  step.kind = Kind::kDigits;
  step.individual_digits = individual;
  return step;
}

PreTokenizerStep PreTokenizerStep::byte_level(bool add_prefix_space, bool use_regex) {
  PreTokenizerStep step;
  step.kind = Kind::kByteLevel;
  step.add_prefix_space = add_prefix_space;
  step.use_regex = use_regex;
  return step;
}

BpePreTokenizer::BpePreTokenizer(std::vector<PreTokenizerStep> steps, const std::string& source)
    : steps_(std::move(steps)) {
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const auto& step = steps_[i];
    if (step.kind == PreTokenizerStep::Kind::kByteLevel && i + 1 != steps_.size())
      throw Error(fmt::format("{}: pre_tokenizer step {} follows ByteLevel, which must be last", source, i + 1));
    switch (step.kind) {
      case PreTokenizerStep::Kind::kSplit:
        regexes_.emplace_back(step.pattern, step.literal, source);
        break;
      case PreTokenizerStep::Kind::kDigits:
        regexes_.emplace_back(step.individual_digits ? R"(\p{N})" : R"(\p{N}+)", false, source);
        break;
      case PreTokenizerStep::Kind::kByteLevel:
        regexes_.emplace_back(kGpt2Pattern, false, source);
        break;
    }
  }
}

BpePreTokenizer BpePreTokenizer::from_json(const nlohmann::json& pre_tokenizer, const std::string& source) {
  if (pre_tokenizer.is_null()) return BpePreTokenizer({}, source);
  if (!pre_tokenizer.is_object())
    throw Error(fmt::format("{}: pre_tokenizer {} is not an object", source, pre_tokenizer.dump()));
  std::vector<PreTokenizerStep> steps;
  if (pre_tokenizer.value("type", std::string()) == "Sequence") {
    const auto& list = pre_tokenizer.at("pretokenizers");
    if (!list.is_array())
      throw Error(fmt::format("{}: pre_tokenizer Sequence pretokenizers is not a list", source));
    for (const auto& step : list) steps.push_back(bpe_pre_tokenizer_impl::step_from_json(step, source));
  } else {
    steps.push_back(bpe_pre_tokenizer_impl::step_from_json(pre_tokenizer, source));
  }
  return BpePreTokenizer(std::move(steps), source);
}

bool BpePreTokenizer::byte_level() const {
  return !steps_.empty() && steps_.back().kind == PreTokenizerStep::Kind::kByteLevel;
}

nlohmann::json BpePreTokenizer::to_json() const {
  if (steps_.empty()) return nullptr;
  if (steps_.size() == 1) return bpe_pre_tokenizer_impl::step_to_json(steps_.front());
  auto list = nlohmann::json::array();
  for (const auto& step : steps_) list.push_back(bpe_pre_tokenizer_impl::step_to_json(step));
  return {{"type", "Sequence"}, {"pretokenizers", list}};
}

std::vector<std::string> BpePreTokenizer::pre_tokenize(const std::string& text) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.push_back(text);
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const auto& step = steps_[i];
    std::vector<std::string> next;
    for (auto& piece : pieces) {
      if (step.kind == PreTokenizerStep::Kind::kByteLevel && step.add_prefix_space && piece.front() != ' ')
        piece.insert(0, 1, ' ');
      if (step.kind == PreTokenizerStep::Kind::kByteLevel && !step.use_regex)
        next.push_back(std::move(piece));
      else if (step.merged_with_previous)
        bpe_pre_tokenizer_impl::split_merged_with_previous(regexes_[i], piece, next);
      else
        bpe_pre_tokenizer_impl::split_isolated(regexes_[i], piece, next);
    }
    pieces = std::move(next);
  }
  if (byte_level())
    for (auto& piece : pieces) piece = bytes_to_unicode_text(piece);
  return pieces;
}

}  // namespace headprune::models
