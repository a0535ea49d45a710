// Small text-formatting helpers shared by the reports.
#pragma once

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace headprune::pruner {

/// Sum of a vector of counts.
inline int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

/// 22713216 -> "22.7M", 1.4e9 -> "1.40G".
std::string human_count(double n);
/// 90868376 -> "86.7 MiB".
std::string human_bytes(std::uintmax_t bytes);
/// Seconds -> "1m05s" / "12.3s".
std::string human_duration(double seconds);
/// `text` safe inside an XML/SVG element or attribute: & < > " escaped (XML 1.0, sec. 2.4).
std::string xml_escape(const std::string& text);

}  // namespace headprune::pruner
