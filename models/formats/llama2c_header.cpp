#include "models/formats/llama2c_header.h"

#include <cstring>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

/// a·b + c, or nullopt on int64 overflow (all operands non-negative).
std::optional<int64_t> mul_add(int64_t a, int64_t b, std::optional<int64_t> c) {
  int64_t product = 0, sum = 0;
  if (!c || __builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, *c, &sum))
    return std::nullopt;
  return sum;
}

}  // namespace

std::optional<int64_t> Llama2cHeader::expected_file_size() const {
  // Every operand is at most 2^31; products of two fit, anything more is checked.
  const int64_t L = n_layers, d = dim, hd = hidden_dim, V = vocab();
  const int64_t kv = int64_t{n_kv_heads} * head_dim();
  std::optional<int64_t> floats = 0;
  floats = mul_add(V, d, floats);                 // token_embedding
  floats = mul_add(L, 2 * d, floats);             // rms_att, rms_ffn
  floats = mul_add(L, d * d, floats);             // wq
  floats = mul_add(L, d * d, floats);             // wo
  floats = mul_add(2 * L, kv * d, floats);        // wk, wv
  floats = mul_add(3 * L, hd * d, floats);        // w1, w2, w3
  floats = mul_add(1, d, floats);                 // rms_final
  floats = mul_add(seq_len, head_dim(), floats);  // freq_cis_real + freq_cis_imag (each /2)
  if (!shared_classifier()) floats = mul_add(V, d, floats);  // wcls
  return floats ? mul_add(4, *floats, int64_t{7 * 4}) : std::nullopt;
}

std::string Llama2cHeader::describe() const {
  return fmt::format("dim={} hidden_dim={} n_layers={} n_heads={} n_kv_heads={} vocab_size={} "
                     "seq_len={}",
                     dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len);
}

Llama2cHeader parse_llama2c_header(const char* data, std::size_t size, int64_t file_size,
                                   const std::string& source) {
  if (size < 28 || file_size < 28)
    throw Error(fmt::format("{}: {} bytes is too short for a llama2.c checkpoint (28-byte "
                            "header)",
                            source, file_size));
  int32_t fields[7];
  std::memcpy(fields, data, sizeof fields);
  const Llama2cHeader h{fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6]};
  if (h.dim <= 0 || h.hidden_dim <= 0 || h.n_layers <= 0 || h.n_heads <= 0 ||
      h.n_kv_heads <= 0 || h.vocab_size == 0 || h.seq_len <= 0)
    throw Error(fmt::format("{}: not a llama2.c checkpoint (header {})", source, h.describe()));
  if (h.dim % h.n_heads != 0 || h.n_heads % h.n_kv_heads != 0 || h.head_dim() % 2 != 0)
    throw Error(fmt::format("{}: inconsistent llama2.c header ({}): dim must be a multiple of "
                            "n_heads, n_heads of n_kv_heads, and head_dim even",
                            source, h.describe()));
  const auto expected = h.expected_file_size();
  if (!expected)
    throw Error(fmt::format("{}: its header ({}) implies a file of more than 2^63 bytes: not a "
                            "llama2.c checkpoint",
                            source, h.describe()));
  if (file_size != *expected)
    throw Error(fmt::format("{}: {} bytes, but its header ({}) implies {} bytes ({}); the file "
                            "is {}",
                            source, file_size, h.describe(), *expected,
                            h.shared_classifier() ? "shared classifier" : "separate classifier wcls",
                            file_size < *expected ? "truncated" : "longer than expected"));
  return h;
}

}  // namespace headprune::models
