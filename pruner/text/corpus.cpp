#include "pruner/text/corpus.h"

#include <algorithm>
#include <fstream>
#include <numeric>

#include <fmt/format.h>
#include <utf8proc.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/input_file.h"

namespace headprune::pruner {

namespace {

/// @throws headprune::Error naming the file and line if `line` is not valid UTF-8.
void check_utf8(const std::string& line, const std::filesystem::path& file, int64_t line_no) {
  const auto* data = reinterpret_cast<const utf8proc_uint8_t*>(line.data());
  const auto size = static_cast<utf8proc_ssize_t>(line.size());
  for (utf8proc_ssize_t pos = 0; pos < size;) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(data + pos, size - pos, &cp);
    if (n <= 0)
      throw Error(fmt::format("corpus {} line {} is not valid UTF-8 (byte {}): convert the file, "
                              "e.g. iconv -f LATIN1 -t UTF-8",
                              file.string(), line_no, pos + 1));
    pos += n;
  }
}

/// Appends the documents of one file to `lines` (see CorpusOptions::paragraphs).
void read_documents(const std::filesystem::path& file, bool paragraphs, std::vector<std::string>& lines) {
  auto in = models::open_input_file(file, "corpus");
  std::string line, paragraph;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    check_utf8(line, file, ++line_no);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const bool blank = line.find_first_not_of(" \t") == std::string::npos;
    if (!paragraphs) {
      if (!blank) lines.push_back(line);
      continue;
    }
    if (blank || line == "%") {
      if (!paragraph.empty()) lines.push_back(std::move(paragraph));
      paragraph.clear();
    } else {
      paragraph += paragraph.empty() ? line : " " + line;
    }
  }
  if (!paragraph.empty()) lines.push_back(std::move(paragraph));
  if (in.bad()) throw Error(fmt::format("error while reading {}", file.string()));
}

std::string names(const std::vector<std::filesystem::path>& files) {
  std::string s;
  for (const auto& f : files) s += (s.empty() ? "" : ", ") + f.string();
  return s;
}

}  // namespace

Corpus load_corpus(const std::vector<std::filesystem::path>& files,
                   const models::Tokenizer& tokenizer, const CorpusOptions& options) {
  if (files.empty()) throw Error("no corpus file given");
  std::vector<std::string> lines;
  for (const auto& f : files) read_documents(f, options.paragraphs, lines);
  return split_corpus(std::move(lines), {}, tokenizer, options, names(files));
}

Corpus split_corpus(std::vector<std::string> documents, const std::vector<int64_t>& labels,
                    const models::Tokenizer& tokenizer, const CorpusOptions& options,
                    const std::string& source) {
  if (!labels.empty() && labels.size() != documents.size())
    throw Error(fmt::format("corpus {}: {} labels for {} documents", source, labels.size(), documents.size()));
  Corpus corpus;
  corpus.lines_read = documents.size();
  corpus.pad_id = tokenizer.pad_id();
  // Shuffling the indices draws what shuffling the documents would: the swaps depend on the
  // length alone, so unlabelled runs keep the split they always had.
  std::vector<std::size_t> order(documents.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(options.seed);
  std::shuffle(order.begin(), order.end(), rng);
  if (options.max_lines > 0 && order.size() > options.max_lines) order.resize(options.max_lines);
  if (order.size() < 2)
    throw Error(fmt::format("corpus {} has {} document(s); at least 2 are needed (one to "
                            "train on, one held out)",
                            source, order.size()));
  auto heldout = static_cast<std::size_t>(
      std::llround(options.holdout_fraction * static_cast<double>(order.size())));
  heldout = std::clamp<std::size_t>(heldout, 1, order.size() - 1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    auto ids = tokenizer.encode(documents[order[i]], options.max_length);
    if (ids.size() < options.min_tokens) continue;
    const bool held = i < heldout;
    if (!labels.empty()) (held ? corpus.heldout_labels : corpus.train_labels).push_back(labels[order[i]]);
    if (held) {
      corpus.heldout.push_back(std::move(ids));
      corpus.heldout_text.push_back(std::move(documents[order[i]]));
    } else {
      corpus.train.push_back(std::move(ids));
    }
  }
  if (corpus.train.empty() || corpus.heldout.empty())
    throw Error(fmt::format("corpus {}: no usable lines after tokenization (each needs at least "
                            "{} tokens)",
                            source, options.min_tokens));
  corpus.profile = profile_text(corpus.train, corpus.heldout_text, corpus.lines_read, tokenizer, options.max_length);
  return corpus;
}

std::vector<std::vector<std::size_t>> length_buckets(
    const std::vector<std::vector<int64_t>>& sequences, std::size_t batch_size) {
  std::vector<std::size_t> order(sequences.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return sequences[a].size() < sequences[b].size();
  });
  std::vector<std::vector<std::size_t>> buckets;
  for (std::size_t i = 0; i < order.size(); i += batch_size)
    buckets.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                         order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + batch_size)));
  return buckets;
}

models::ModelInputs make_inputs(const std::vector<std::vector<int64_t>>& sequences,
                                const std::vector<std::size_t>& indices, int64_t pad_id,
                                const torch::Device& device) {
  std::size_t seq = 0;
  for (auto i : indices) seq = std::max(seq, sequences[i].size());
  const auto B = static_cast<int64_t>(indices.size()), T = static_cast<int64_t>(seq);
  auto ids = torch::full({B, T}, pad_id, torch::kLong);
  auto mask = torch::zeros({B, T}, torch::kLong);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& s = sequences[indices[b]];
    for (std::size_t t = 0; t < s.size(); ++t) {
      ids_a[b][t] = s[t];
      mask_a[b][t] = 1;
    }
  }
  return {ids.to(device), mask.to(device), torch::zeros({B, T}, torch::kLong).to(device)};
}

BatchStream::BatchStream(const std::vector<std::vector<int64_t>>& sequences,
                         std::size_t batch_size, int64_t pad_id, uint64_t seed)
    : sequences_(sequences), buckets_(length_buckets(sequences, batch_size)), pad_id_(pad_id),
      rng_(seed) {
  if (buckets_.empty()) throw Error("no training sequences to batch");
  reshuffle();
}

void BatchStream::reshuffle() {
  order_.resize(buckets_.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::shuffle(order_.begin(), order_.end(), rng_);
  position_ = 0;
}

void BatchStream::skip(int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (++position_ == order_.size()) reshuffle();
}

models::ModelInputs BatchStream::next(const torch::Device& device, int rank, int world_size) {
  last_bucket_ = order_[position_];
  skip(1);
  const auto& batch = buckets_[last_bucket_];
  const auto n = batch.size(), w = static_cast<std::size_t>(world_size), r = static_cast<std::size_t>(rank);
  last_rows_.assign(batch.begin() + static_cast<std::ptrdiff_t>(n * r / w),
                    batch.begin() + static_cast<std::ptrdiff_t>(n * (r + 1) / w));
  if (!last_rows_.empty()) return make_inputs(sequences_, last_rows_, pad_id_, device);
  auto first = make_inputs(sequences_, {batch.front()}, pad_id_, device);
  return {first.input_ids.slice(0, 0, 0), first.attention_mask.slice(0, 0, 0),
          first.token_type_ids.slice(0, 0, 0)};
}

}  // namespace headprune::pruner
