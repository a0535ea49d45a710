// Plain-text corpora: reading, tokenizing, splitting, and length-bucketed batching.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "models/attention_model.h"
#include "models/tokenizer/tokenizer.h"
#include "pruner/text/text_profile.h"

namespace headprune::pruner {

/// How a corpus file becomes training and held-out sequences.
struct CorpusOptions {
  std::size_t max_length = 128;      ///< tokens per sequence incl. special tokens (truncation)
  double holdout_fraction = 0.1;     ///< share of lines kept out of training
  std::size_t max_lines = 0;         ///< 0 = all lines
  std::size_t min_tokens = 3;        ///< shorter sequences (incl. [CLS]/[SEP]) are dropped
  uint64_t seed = 42;                ///< shuffles lines before the split
  /// Paragraph mode: a document is a run of non-blank lines, ended by a blank line or a line
  /// holding only '%' (the fortune-file separator); its line breaks become spaces.
  bool paragraphs = false;
};

/// A tokenized corpus. Each sequence is a list of ids with special tokens.
struct Corpus {
  std::vector<std::vector<int64_t>> train;
  std::vector<std::vector<int64_t>> heldout;
  std::vector<std::string> heldout_text;
  /// Labelled text only (--labels): the class id of each train / heldout sequence; else empty.
  std::vector<int64_t> train_labels, heldout_labels;
  std::size_t lines_read = 0;        ///< non-blank lines in the file
  int64_t pad_id = 0;
  TextProfile profile;               ///< what the training text looks like (profile_text)
};

/// Reads the `files`, in order (UTF-8 text, one document or sentence per line — or per paragraph, see
/// CorpusOptions::paragraphs; blank lines ignored; CRLF accepted), shuffles the documents with options.seed, splits off the held-out share and tokenizes.
/// @throws headprune::Error if the file cannot be read or yields fewer than 2 usable lines.
Corpus load_corpus(const std::vector<std::filesystem::path>& files,
                   const models::Tokenizer& tokenizer, const CorpusOptions& options);

/// load_corpus's steps after reading: shuffles the documents with options.seed (and their
/// labels with them), keeps options.max_lines, splits off the held-out share and tokenizes,
/// dropping sequences under options.min_tokens. `labels` is empty (unlabelled text) or one
/// class id per document. `source` names the text in errors.
/// @throws headprune::Error for fewer than 2 documents or no usable training/held-out sequence.
Corpus split_corpus(std::vector<std::string> documents, const std::vector<int64_t>& labels,
                    const models::Tokenizer& tokenizer, const CorpusOptions& options,
                    const std::string& source);

/// Groups sequences of similar length into batches of at most `batch_size` (sorted by length,
/// then cut), so little compute goes to padding. @returns index lists into `sequences`.
std::vector<std::vector<std::size_t>> length_buckets(
    const std::vector<std::vector<int64_t>>& sequences, std::size_t batch_size);

/// Right-pads the chosen sequences into model inputs on `device`.
models::ModelInputs make_inputs(const std::vector<std::vector<int64_t>>& sequences,
                                const std::vector<std::size_t>& indices, int64_t pad_id,
                                const torch::Device& device);

/// Endless stream of training batches: each epoch visits every bucket once in a shuffled
/// order (seeded, so runs are reproducible and `skip` can resume mid-stream).
class BatchStream {
 public:
  BatchStream(const std::vector<std::vector<int64_t>>& sequences, std::size_t batch_size,
              int64_t pad_id, uint64_t seed);
  /// The next batch — or, in a data-parallel job, this rank's share of it: the sequences
  /// [n·rank/world_size, n·(rank+1)/world_size) of the batch's n (similar lengths stay
  /// together). A share can be empty (n < world_size): then 0 rows of the batch's first
  /// sequence's length.
  models::ModelInputs next(const torch::Device& device, int rank = 0, int world_size = 1);
  /// Indices (into the sequences) of the rows the last next() returned, in row order.
  const std::vector<std::size_t>& last_rows() const { return last_rows_; }
  /// Index of the bucket the last next() returned (buckets are fixed for the stream's life,
  /// so a bucket's teacher outputs can be cached).
  std::size_t last_bucket() const { return last_bucket_; }
  /// Advances by n batches without building them (for --resume).
  void skip(int64_t n);

 private:
  void reshuffle();
  const std::vector<std::vector<int64_t>>& sequences_;
  std::vector<std::vector<std::size_t>> buckets_;
  std::vector<std::size_t> order_;
  std::size_t position_ = 0;
  std::size_t last_bucket_ = 0;
  std::vector<std::size_t> last_rows_;
  int64_t pad_id_;
  std::mt19937_64 rng_;
};

}  // namespace headprune::pruner
