// SentencePiece's compiled normalization rules (the `precompiled_charsmap` of a SentencePiece
// model's NormalizerSpec, e.g. nmt_nfkc: NFKC plus SentencePiece's own folds), applied as HF
// tokenizers' `normalizers::Precompiled` does (tokenizers `normalizers/precompiled.rs` on the
// `spm_precompiled` crate), which is what XLM-RoBERTa's tokenizer.json runs.
//
// Format (sentencepiece `normalizer.cc`, Normalizer::DecodePrecompiledCharsMap): a little-endian
// uint32 trie size in bytes, the trie (a Darts-clone double array of uint32 units keyed by UTF-8
// bytes, whose values are byte offsets into the next part), then the replacement strings, each
// ended by a NUL byte. tokenizer.json stores the whole blob base64-encoded.
//
// Matching (HF, not sentencepiece's own longest-match loop): the text is cut into extended
// grapheme clusters (UAX #29; utf8proc here, Rust unicode-segmentation there). A cluster shorter
// than 6 bytes whose bytes start with a key of the trie is replaced WHOLE by the replacement of
// the first (shortest) such key; any other cluster is taken character by character, each
// replaced the same way or kept. (HF's comment on this: "Yes, this seems broken ... check this
// normalizer against XNLI ... If you don't get 100% ... You don't pass": mirrored exactly.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headprune::models {

class PrecompiledCharsmap {
 public:
  /// From tokenizer.json's `precompiled_charsmap` (base64). @throws headprune::Error naming
  /// `source` when the text is not base64 or the blob is malformed (see the constructor).
  static PrecompiledCharsmap from_base64(const std::string& text, const std::string& source);
  /// From the raw blob. @throws headprune::Error naming `source` when it is shorter than its
  /// header, the trie size is not a multiple of 4 or runs past the blob, or the trie is empty.
  PrecompiledCharsmap(const std::string& blob, const std::string& source);

  /// `text` (valid UTF-8) with every rule applied as described above.
  /// @throws headprune::Error when a trie walk or a replacement offset leaves the blob
  /// (a corrupt charsmap; sentencepiece would read out of bounds).
  std::string normalize(const std::string& text) const;

 private:
  /// The replacement of the shortest trie key that `chunk` starts with, or none.
  std::optional<std::string_view> transform(std::string_view chunk) const;
  /// Appends `chunk`'s replacement, or `chunk` itself.
  void append_transformed(std::string_view chunk, std::string& out) const;
  /// The trie unit at `pos`. @throws headprune::Error past the end.
  uint32_t unit(std::size_t pos) const;

  std::string source_;
  std::vector<uint32_t> units_;  ///< the double array
  std::string normalized_;       ///< NUL-separated replacement strings
};

}  // namespace headprune::models
