// Python modelling code written beside an export, for readers whose built-in class cannot
// load the pruned shapes (transformers 5 dropped `pruned_heads`). LibTorch-free.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace headprune::models {

/// One Python modelling file (self-contained but for `imports`) and the `auto_map` that registers it: Hugging
/// Face's remote-code mechanism (`from_pretrained(folder, trust_remote_code=True)` imports
/// `file_name` from the folder and builds the class `auto_map[AutoClass]` names). Readers that
/// are not given `trust_remote_code` ignore `auto_map` and use their built-in class.
struct RemoteCode {
  std::string file_name;    ///< e.g. "modeling_headprune_bert.py"
  std::string source;       ///< the file's text (embedded at build time from models/<family>/)
  nlohmann::json auto_map;  ///< {"AutoModel": "<module>.<Class>", ...}
  /// Files `file_name` imports from its own folder (`from .modeling_headprune_bert import ...`,
  /// which transformers' dynamic modules resolve beside it): name -> text, written with it.
  std::map<std::string, std::string> imports;
};

}  // namespace headprune::models
