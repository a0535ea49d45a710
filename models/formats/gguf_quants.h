// ggml tensor types as GGUF stores them, and their dequantisation to float32 (no tensor
// library involved: fuzzed and tested on its own).
//
// Sources: ggml's ggml.h (`enum ggml_type`), ggml-common.h (block layouts: block_q4_0, block_q4_1,
// block_q8_0, block_q4_K, block_q5_K, block_q6_K) and ggml-quants.c (dequantize_row_*). Each
// block of `block_size` values is stored in `type_size` bytes, little-endian; f16/bf16 scales are
// IEEE half / bfloat16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace headprune::models {

/// ggml_type values (ggml.h). Only the types this reader knows are named.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10,
  Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, I8 = 24, I16 = 25, I32 = 26, I64 = 27,
  F64 = 28, BF16 = 30
};

/// How a ggml type packs values: `block_size` values in `type_size` bytes.
struct GgmlTypeTraits {
  GgmlType type;
  const char* name;  ///< ggml's name ("Q4_K")
  int64_t block_size;
  int64_t type_size;
  bool dequantizable;  ///< dequantize_row supports it
};

/// The traits of the ggml type numbered `type`, or nullopt for a number ggml does not define
/// (or one this reader does not know at all).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type);
/// The traits of a known type.
GgmlTypeTraits ggml_type_traits(GgmlType type);

/// The types dequantize_row supports, for messages ("F32, F16, BF16, Q8_0, ...").
const char* ggml_dequantizable_types();

/// Dequantises `n` values (a multiple of the type's block size) from `src` (n / block_size ×
/// type_size bytes) into `dst`, as ggml's dequantize_row_<type> does:
///   Q8_0: x = d·q;  Q4_0: x = d·(q − 8);  Q4_1: x = d·q + m (low nibbles are values 0..15 of
///   the block, high nibbles 16..31);  Q4_K / Q5_K: 8 sub-blocks of 32 with 6-bit scales and
///   mins, x = d·sc·q − dmin·m;  Q6_K: 16 sub-blocks of 16 with int8 scales, x = d·sc·(q − 32).
/// F32, F16 and BF16 are converted exactly.
/// @throws headprune::Error for a type dequantize_row does not support.
void dequantize_row(GgmlType type, const uint8_t* src, float* dst, int64_t n);

/// IEEE 754 binary16 bits -> float (exact).
float half_to_float(uint16_t bits);

}  // namespace headprune::models
