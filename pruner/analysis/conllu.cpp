#include "pruner/analysis/conllu.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "models/input_file.h"
#include "pruner/measure/csv_table.h"

namespace headprune::pruner {
namespace {

/// A non-negative decimal integer, or -1 when `s` is not one (or too long to be an index).
int64_t parse_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  int64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

/// Builds sentences line by line, checking each word against the sentence so far.
class ConlluReader {
 public:
  explicit ConlluReader(std::string source) : source_(std::move(source)) {}

  void line(const std::string& text, std::size_t number) {
    if (text.empty()) return end_sentence();
    if (text[0] == '#') return;
    const auto fields = split_tabs(text);
    if (fields.size() != 10)
      fail(number, fmt::format("a word line has 10 tab-separated fields, this one {}", fields.size()));
    const auto& id = fields[0];
    if (id.find('-') != std::string::npos || id.find('.') != std::string::npos)
      return check_special_id(id, number);  // multiword token or empty node: no basic syntax
    word(fields, number);
  }

  std::vector<ConlluSentence> finish() {
    end_sentence();
    return std::move(sentences_);
  }

 private:
  [[noreturn]] void fail(std::size_t number, const std::string& what) const {
    throw Error(fmt::format("{}:{}: {}", source_, number, what));
  }

  void check_special_id(const std::string& id, std::size_t number) const {
    const auto sep = id.find_first_of("-.");
    if (parse_index(id.substr(0, sep)) < 0 || parse_index(id.substr(sep + 1)) < 0)
      fail(number, fmt::format("ID '{}' is neither a word index, a range (1-2) nor a decimal (8.1)", id));
  }

  void word(const std::vector<std::string>& fields, std::size_t number) {
    const auto id = parse_index(fields[0]);
    const auto expected = static_cast<int64_t>(current_.words.size()) + 1;
    if (id != expected)
      fail(number, fmt::format("ID '{}': expected word {} (IDs run 1, 2, ... in each sentence)", fields[0], expected));
    const auto head = parse_index(fields[6]);
    if (head < 0) fail(number, fmt::format("HEAD '{}' is not a word index", fields[6]));
    if (head == id) fail(number, fmt::format("HEAD {} is the word itself", head));
    if (fields[1].empty()) fail(number, "FORM is empty");
    if (current_.words.empty()) current_.line = number;
    const auto colon = fields[7].find(':');
    current_.words.push_back({fields[1], head, fields[7].substr(0, colon)});
    heads_.push_back({head, number});
  }

  void end_sentence() {
    const auto n = static_cast<int64_t>(current_.words.size());
    for (const auto& [head, number] : heads_)
      if (head > n) fail(number, fmt::format("HEAD {} is beyond the sentence's {} words", head, n));
    if (n > 0) sentences_.push_back(std::move(current_));
    current_ = {};
    heads_.clear();
  }

  std::string source_;
  std::vector<ConlluSentence> sentences_;
  ConlluSentence current_;
  std::vector<std::pair<int64_t, std::size_t>> heads_;  ///< (HEAD, line) of the current sentence
};

}  // namespace

std::vector<ConlluSentence> parse_conllu(const std::string& text, const std::string& source) {
  ConlluReader reader(source);
  std::size_t start = 0, number = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    auto line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    reader.line(line, ++number);
    start = end + 1;
  }
  return reader.finish();
}

std::vector<ConlluSentence> read_conllu(const std::filesystem::path& file) {
  return parse_conllu(models::read_input_file(file, "CoNLL-U file"), file.string());
}

}  // namespace headprune::pruner
