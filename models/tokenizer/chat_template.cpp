#include "models/tokenizer/chat_template.h"

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

constexpr const char* kMessageLoop =
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
constexpr const char* kLoopStart = "{% for message in messages %}";
constexpr const char* kDefaultSystemStart =
    "{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n";
constexpr const char* kDefaultSystemEnd = "<|im_end|>\n' }}{% endif %}";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

ChatTemplate ChatTemplate::recognise(const std::string& jinja) {
  if (jinja.empty()) throw Error("the model has no chat template (tokenizer_config.json chat_template)");
  ChatTemplate t;
  const std::string loop = kLoopStart, body = kMessageLoop;
  if (jinja == loop + body) return t;
  const std::string start = loop + kDefaultSystemStart;
  if (starts_with(jinja, start)) {
    const auto end = jinja.find(kDefaultSystemEnd, start.size());
    if (end != std::string::npos && jinja.compare(end + std::string(kDefaultSystemEnd).size(), std::string::npos, body) == 0) {
      t.default_system_ = jinja.substr(start.size(), end - start.size());
      if (t.default_system_.find_first_of("'\"{}\\") == std::string::npos) return t;
    }
  }
  throw Error(fmt::format("the chat template is not one headprune can apply (it recognises ChatML "
                          "templates only; this one starts '{}'): format the prompt yourself and "
                          "pass it without --chat",
                          jinja.substr(0, 60)));
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string out;
  if (!default_system_.empty() && !messages.empty() && messages.front().role != "system")
    out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
  for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace headprune::models
