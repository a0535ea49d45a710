// The special tokens an HF tokenizer.json post-processor puts around one text (HF
// `processors`), for the tokenizers that read tokenizer.json (BPE, Unigram).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headprune::models {

/// Appends to `prefix` / `suffix` the ids `post` adds before / after a single text:
/// TemplateProcessing's "single" template (special tokens around one $A), RobertaProcessing /
/// BertProcessing (cls $A sep; trim_offsets and add_prefix_space change only offsets),
/// ByteLevel (offsets only, nothing), a Sequence of them, or null (nothing).
/// @throws headprune::Error naming `source` for any other post-processor or a malformed one.
void read_post_processor(const nlohmann::json& post, const std::string& source, std::vector<int64_t>& prefix,
                         std::vector<int64_t>& suffix);

}  // namespace headprune::models
