// The allow-list of config.json keys: every key either changes the computation and is
// modelled (or required to hold the one value headprune implements), or provably does not
// change what a forward pass computes. Anything else is refused by name.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/model_family.h"

namespace headprune::models {

/// Checks every top-level key of a `config.json` object against the allow-list: common keys,
/// the family's ModelFamily::modelled_keys(), inert and fixed-value keys (models/config_keys.cpp lists each key with why it is allowed).
/// @throws headprune::Error naming `source` and the first key that is not allowed, or a key
///         whose value headprune does not implement (e.g. position_embedding_type "relative_key").
void check_config_keys(const nlohmann::json& config, const ModelFamily& family,
                       const std::string& source);

}  // namespace headprune::models
