#include "models/json_get.h"

#include <limits>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {

int64_t json_integer(const nlohmann::json& v, const std::string& what) {
  const bool too_big = v.is_number_unsigned() &&
                       v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!v.is_number_integer() || too_big)
    throw Error(fmt::format("{} must be an integer, not {}", what, v.dump()));
  return v.get<int64_t>();
}

std::vector<int64_t> json_integer_list(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) throw Error(fmt::format("{} must be a list of integers, not {}", what, v.dump()));
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(json_integer(v[i], fmt::format("{}[{}]", what, i)));
  return out;
}

std::vector<std::vector<int64_t>> json_integer_lists(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) throw Error(fmt::format("{} must be a list of lists of integers", what));
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(json_integer_list(v[i], fmt::format("{}[{}]", what, i)));
  return out;
}

}  // namespace headprune::models
