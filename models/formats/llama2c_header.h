// The 7-int header of Karpathy's llama2.c checkpoint format (`run.c`), parsed and checked with
// no tensor library involved, so that it can be fuzzed on its own (tests/fuzz).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace headprune::models {

/// `dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len` (int32, little-endian);
/// vocab_size < 0 means a separate classifier wcls follows the shared tensors.
struct Llama2cHeader {
  int32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0,
          seq_len = 0;
  bool shared_classifier() const { return vocab_size > 0; }
  int64_t vocab() const { return vocab_size < 0 ? -int64_t{vocab_size} : vocab_size; }
  int64_t head_dim() const { return dim / n_heads; }
  /// Exact file size in bytes these dimensions imply (header, every tensor, freq_cis, wcls),
  /// or nullopt when it would not fit in int64 (no real file is that large).
  std::optional<int64_t> expected_file_size() const;
  /// "dim=... hidden_dim=... ..." for messages.
  std::string describe() const;
};

/// Parses and checks the header at the start of a llama2.c file of `file_size` bytes (`data`
/// holds at least its first min(size, 28) bytes). `source` names the file in messages.
/// @throws headprune::Error: fewer than 28 bytes; a non-positive dimension; dim not divisible
///         by n_heads, n_heads not by n_kv_heads, or an odd head_dim; or a file size other than
///         the one the header implies (both sizes given, and which way it is off).
Llama2cHeader parse_llama2c_header(const char* data, std::size_t size, int64_t file_size,
                                   const std::string& source);

}  // namespace headprune::models
