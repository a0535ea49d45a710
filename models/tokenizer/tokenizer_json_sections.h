// What the tokenizer.json readers (BPE, Unigram) share: a section's type, the special tokens the
// post-processor puts around one text (HF `processors`), and HF's truncation around them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headprune::models {

/// `section`'s "type" in tokenizer.json `j` ("normalizer", "model", ...): "" when absent or
/// null, "?" when not an object.
std::string section_type(const nlohmann::json& j, const char* section);

/// Appends to `prefix` / `suffix` the ids `post` adds before / after a single text:
/// TemplateProcessing's "single" template (special tokens around one $A), RobertaProcessing /
/// BertProcessing (cls $A sep; trim_offsets and add_prefix_space change only offsets),
/// ByteLevel (offsets only, nothing), a Sequence of them, or null (nothing).
/// @throws headprune::Error naming `source` for any other post-processor or a malformed one.
void read_post_processor(const nlohmann::json& post, const std::string& source, std::vector<int64_t>& prefix,
                         std::vector<int64_t>& suffix);

/// HF `tokenizer(text, truncation=True, max_length=max_length)`: `body` (the text's ids) cut to
/// max_length minus the frame's tokens, between `prefix` and `suffix`. @throws headprune::Error
/// naming `who` when max_length leaves no room for the text.
std::vector<int64_t> truncate_and_frame(std::vector<int64_t> body, const std::vector<int64_t>& prefix,
                                        const std::vector<int64_t>& suffix, std::size_t max_length,
                                        const std::string& who);

}  // namespace headprune::models
