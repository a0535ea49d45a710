#include "models/formats/gguf_quants.h"

#include <array>
#include <cstring>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

constexpr int64_t kQK = 32;    // QK4_0, QK4_1, QK5_0, QK5_1, QK8_0
constexpr int64_t kQKK = 256;  // QK_K: the K-quants' super-block

constexpr std::array<GgmlTypeTraits, 20> kTraits{{
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", kQK, 2 + 16, true},
    {GgmlType::Q4_1, "Q4_1", kQK, 2 + 2 + 16, true},
    {GgmlType::Q5_0, "Q5_0", kQK, 2 + 4 + 16, true},
    {GgmlType::Q5_1, "Q5_1", kQK, 2 + 2 + 4 + 16, true},
    {GgmlType::Q8_0, "Q8_0", kQK, 2 + 32, true},
    {GgmlType::Q8_1, "Q8_1", kQK, 4 + 32, false},
    {GgmlType::Q2_K, "Q2_K", kQKK, 16 + 64 + 2 + 2, false},
    {GgmlType::Q3_K, "Q3_K", kQKK, 32 + 64 + 12 + 2, false},
    {GgmlType::Q4_K, "Q4_K", kQKK, 2 + 2 + 12 + 128, true},
    {GgmlType::Q5_K, "Q5_K", kQKK, 2 + 2 + 12 + 32 + 128, true},
    {GgmlType::Q6_K, "Q6_K", kQKK, 128 + 64 + 16 + 2, true},
    {GgmlType::Q8_K, "Q8_K", kQKK, 4 + 256 + 32, false},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
}};

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
float f16(const uint8_t* p) { return half_to_float(u16(p)); }

float bf16_to_float(uint16_t bits) {
  const uint32_t u = uint32_t{bits} << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Q4_0 / Q4_1 / Q5_0 / Q5_1: 32 values; low nibbles (and qh bit j) are values 0..15, high
/// nibbles (and qh bit j+16) values 16..31; `offset` is 8 or 16 for the symmetric types.
void dequantize_small_blocks(GgmlType type, const uint8_t* src, float* dst, int64_t blocks) {
  const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
  const bool five_bit = type == GgmlType::Q5_0 || type == GgmlType::Q5_1;
  const int offset = has_min ? 0 : (five_bit ? 16 : 8);
  const auto size = ggml_type_traits(type).type_size;
  for (int64_t b = 0; b < blocks; ++b, src += size, dst += kQK) {
    const float d = f16(src);
    const float m = has_min ? f16(src + 2) : 0.0F;
    const uint8_t* p = src + (has_min ? 4 : 2);
    uint32_t qh = 0;
    if (five_bit) {
      qh = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
      p += 4;
    }
    for (int j = 0; j < 16; ++j) {
      const int h0 = five_bit ? static_cast<int>((qh >> j) << 4 & 0x10) : 0;
      const int h1 = five_bit ? static_cast<int>((qh >> (j + 12)) & 0x10) : 0;
      const int x0 = ((p[j] & 0x0F) | h0) - offset;
      const int x1 = ((p[j] >> 4) | h1) - offset;
      dst[j] = has_min ? x0 * d + m : x0 * d;
      dst[j + 16] = has_min ? x1 * d + m : x1 * d;
    }
  }
}

void dequantize_q8_0(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 34, dst += kQK) {
    const float d = f16(src);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<int8_t>(src[2 + j]) * d;
  }
}

/// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j from the 12 packed bytes.
void scale_min_k4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/// Q4_K (qh == nullptr) and Q5_K: per 64 values two sub-blocks, low then high nibbles of 32
/// bytes; Q5_K adds bit (2i, 2i+1) of qh as the fifth bit.
void dequantize_q4_q5_k(GgmlType type, const uint8_t* src, float* dst, int64_t blocks) {
  const bool five_bit = type == GgmlType::Q5_K;
  const auto size = ggml_type_traits(type).type_size;
  for (int64_t b = 0; b < blocks; ++b, src += size) {
    const float d = f16(src), dmin = f16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* q = five_bit ? src + 48 : src + 16;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < kQKK; j += 64, is += 2, q += 32) {
      uint8_t sc = 0, m = 0;
      scale_min_k4(is, scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      scale_min_k4(is + 1, scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) {
        const int hi = five_bit && (qh[l] & u1) ? 16 : 0;
        *dst++ = d1 * static_cast<float>((q[l] & 0xF) + hi) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int hi = five_bit && (qh[l] & u2) ? 16 : 0;
        *dst++ = d2 * static_cast<float>((q[l] >> 4) + hi) - m2;
      }
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void dequantize_q6_k(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 210) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = f16(src + 208);
    for (int n = 0; n < kQKK; n += 128, dst += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0 & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2 & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
        dst[l] = d * sc[is] * static_cast<float>(q1);
        dst[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        dst[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        dst[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace

float half_to_float(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000U} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FFU;
  uint32_t u = 0;
  if (exponent == 0x1F) {
    u = sign | 0x7F800000U | (mantissa << 13);  // inf / NaN
  } else if (exponent != 0) {
    u = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {  // subnormal: normalise
    int e = 113;
    while (!(mantissa & 0x400U)) {
      mantissa <<= 1;
      --e;
    }
    u = sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3FFU) << 13);
  } else {
    u = sign;
  }
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type) {
  for (const auto& t : kTraits)
    if (static_cast<uint32_t>(t.type) == type) return t;
  return std::nullopt;
}

GgmlTypeTraits ggml_type_traits(GgmlType type) { return *ggml_type_traits(static_cast<uint32_t>(type)); }

const char* ggml_dequantizable_types() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K";
}

void dequantize_row(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  const auto traits = ggml_type_traits(type);
  const int64_t blocks = n / traits.block_size;
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16(src + 2 * i);
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(u16(src + 2 * i));
      return;
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1: dequantize_small_blocks(type, src, dst, blocks); return;
    case GgmlType::Q8_0: dequantize_q8_0(src, dst, blocks); return;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: dequantize_q4_q5_k(type, src, dst, blocks); return;
    case GgmlType::Q6_K: dequantize_q6_k(src, dst, blocks); return;
    default:
      throw Error(fmt::format("ggml type {} cannot be dequantised here (supported: {})", traits.name,
                              ggml_dequantizable_types()));
  }
}

}  // namespace headprune::models
