#include "models/tokenizer/pcre2_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {

struct Pcre2Regex::Code {
  pcre2_code* code = nullptr;
  Code() = default;
  Code(const Code&) = delete;
  Code& operator=(const Code&) = delete;
  ~Code() { pcre2_code_free(code); }
};

namespace pcre2_regex_impl {

std::string pcre2_message(int error) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(error, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

/// Owns one match-data block (one per call: the regex is shared between threads).
struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  ~MatchData() { pcre2_match_data_free(data); }
};

}  // namespace pcre2_regex_impl

Pcre2Regex::Pcre2Regex(const std::string& pattern, bool literal, const std::string& source)
    : pattern_(pattern) {
  auto code = std::make_shared<Code>();
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP;  // LITERAL refuses UCP
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                             &error, &offset, nullptr);
  if (!code->code)
    throw Error(fmt::format("{}: pre-tokenizer pattern '{}' is not a valid PCRE2 regex: {} at offset {}",
                            source, pattern, pcre2_regex_impl::pcre2_message(error), offset));
  pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);  // optional: interpreted when JIT is absent
  code_ = std::move(code);
}

std::vector<std::pair<std::size_t, std::size_t>> Pcre2Regex::find_all(const std::string& text) const {
  std::vector<std::pair<std::size_t, std::size_t>> found;
  pcre2_regex_impl::MatchData match(code_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t at = 0;
  while (at <= text.size()) {
    int rc = pcre2_match(code_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match.data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // the interpreter keeps its backtracking on the heap
      rc = pcre2_match(code_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, match.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      throw Error(fmt::format("pre-tokenizer regex '{}' failed on a text of {} bytes: {}", pattern_,
                              text.size(), pcre2_regex_impl::pcre2_message(rc)));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    const std::size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      found.emplace_back(begin, end);
      at = end;
    } else {  // empty match: not a piece; step over one UTF-8 character
      at = begin + 1;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
    }
  }
  return found;
}

}  // namespace headprune::models
