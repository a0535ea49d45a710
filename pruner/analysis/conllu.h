// Reading dependency treebanks in CoNLL-U (Universal Dependencies), for `headprune heads`.
// LibTorch-free.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace headprune::pruner {

/// One syntactic word of a sentence: its form, its governor and relation.
struct ConlluWord {
  std::string form;      ///< FORM
  int64_t head = 0;      ///< HEAD: 1-based index of the governor word, 0 for the root
  std::string relation;  ///< DEPREL without its subtype ("obl:tmod" -> "obl")
};

/// One sentence: syntactic words in order (ID 1..n), and where it starts in the file.
struct ConlluSentence {
  std::vector<ConlluWord> words;
  std::size_t line = 0;  ///< 1-based line of its first word
};

/// Parses CoNLL-U text (https://universaldependencies.org/format.html): comment lines (`#`)
/// are skipped, a blank line ends a sentence (also the end of the text), a word line has 10
/// tab-separated fields. Multiword-token lines (ID "1-2") carry no syntax and are skipped, as
/// are empty nodes (ID "8.1", enhanced graphs only); the syntactic words' IDs must run 1..n and
/// every HEAD be 0..n.
/// @throws headprune::Error "SOURCE:LINE: ..." naming the field that is wrong.
std::vector<ConlluSentence> parse_conllu(const std::string& text, const std::string& source);

/// parse_conllu on a file (open_input_file's errors for a missing or unreadable file).
std::vector<ConlluSentence> read_conllu(const std::filesystem::path& file);

}  // namespace headprune::pruner
