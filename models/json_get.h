// Reading integers out of JSON a user supplied. nlohmann's get<int64_t>() also accepts a float
// and casts it, which is undefined behaviour when it is out of range (found by fuzzing
// gates.json): these accept JSON integers only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/errors.h"

namespace headprune::models {

/// The integer `v` holds. @throws headprune::Error "WHAT must be an integer, not V" for a float,
/// a string, ..., or an unsigned value above INT64_MAX.
int64_t json_integer(const nlohmann::json& v, const std::string& what);

/// A list of integers. @throws headprune::Error naming `what` (and the bad element).
std::vector<int64_t> json_integer_list(const nlohmann::json& v, const std::string& what);

/// A list of lists of integers. @throws headprune::Error naming `what`.
std::vector<std::vector<int64_t>> json_integer_lists(const nlohmann::json& v, const std::string& what);

/// `j[key]` as a T (integers through json_integer). `source` names the file in errors.
/// @throws headprune::Error "SOURCE: required key 'KEY' is missing" or "... has the wrong type".
template <typename T>
T json_required(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) throw Error(fmt::format("{}: required key '{}' is missing", source, key));
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(json_integer(j.at(key), fmt::format("{}: key '{}'", source, key)));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}: key '{}' has the wrong type ({})", source, key, j.at(key).type_name()));
  }
}

/// `j[key]` as a T, or `fallback` when absent or null (HF's default).
/// @throws headprune::Error as json_required for a present, wrong-typed value.
template <typename T>
T json_optional(const nlohmann::json& j, const char* key, T fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  return json_required<T>(j, key, source);
}

}  // namespace headprune::models
