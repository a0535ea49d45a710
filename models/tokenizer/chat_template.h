// Chat templates that headprune applies exactly. HF stores a model's chat format as a Jinja
// template (`chat_template` in tokenizer_config.json, chat_template.jinja, or GGUF
// `tokenizer.chat_template`); rather than run arbitrary Jinja, headprune recognises the
// templates whose output it can reproduce character for character and refuses every other.
//
// Recognised: ChatML (`<|im_start|>ROLE\nCONTENT<|im_end|>\n` per message, then
// `<|im_start|>assistant\n` as the generation prompt), as written by OpenHermes / Qwen-style
// templates, and the SmolLM2 variant that first inserts a default system message when the
// conversation does not start with one.
#pragma once

#include <string>
#include <vector>

namespace headprune::models {

/// One turn of a conversation ("system", "user", "assistant").
struct ChatMessage {
  std::string role;
  std::string content;
};

/// A recognised ChatML template.
class ChatTemplate {
 public:
  /// Recognises `jinja` (exactly one of the forms above; the default system message of the
  /// SmolLM2 form may be any text without quotes or braces).
  /// @throws headprune::Error "the chat template is not one headprune can apply (...)" quoting
  ///         its start, or "the model has no chat template" for an empty one.
  static ChatTemplate recognise(const std::string& jinja);

  /// The text the template renders for `messages` (HF `apply_chat_template(..., tokenize=False,
  /// add_generation_prompt=...)`).
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

 private:
  std::string default_system_;
};

}  // namespace headprune::models
