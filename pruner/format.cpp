#include "pruner/format.h"

#include <cmath>

#include <fmt/format.h>

namespace headprune::pruner {

std::string human_count(double n) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (std::abs(n) >= 1000 && u < 4) {
    n /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", n) : fmt::format("{:.{}f}{}", n, n < 10 ? 2 : 1, units[u]);
}

std::string human_bytes(std::uintmax_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string human_duration(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  const auto total = static_cast<int64_t>(std::lround(seconds));
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, total % 60);
  return fmt::format("{}h{:02d}m", total / 3600, (total % 3600) / 60);
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace headprune::pruner
