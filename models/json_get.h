// Reading integers out of JSON a user supplied. nlohmann's get<int64_t>() also accepts a float
// and casts it, which is undefined behaviour when it is out of range (found by fuzzing
// gates.json): these accept JSON integers only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headprune::models {

/// The integer `v` holds. @throws headprune::Error "WHAT must be an integer, not V" for a float,
/// a string, ..., or an unsigned value above INT64_MAX.
int64_t json_integer(const nlohmann::json& v, const std::string& what);

/// A list of integers. @throws headprune::Error naming `what` (and the bad element).
std::vector<int64_t> json_integer_list(const nlohmann::json& v, const std::string& what);

/// A list of lists of integers. @throws headprune::Error naming `what`.
std::vector<std::vector<int64_t>> json_integer_lists(const nlohmann::json& v, const std::string& what);

}  // namespace headprune::models
