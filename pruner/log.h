// Leveled messages on stderr (results go to stdout, so they can be piped).
#pragma once

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace headprune::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

/// The process-wide level (default kInfo); set by `--log-level`.
Level& level();
/// Parses "error", "warn", "info", "debug". @throws headprune::UsageError otherwise.
Level parse_level(const std::string& name);

template <typename... Args>
void write(Level at, const char* tag, fmt::format_string<Args...> f, Args&&... args) {
  if (static_cast<int>(at) > static_cast<int>(level())) return;
  fmt::print(stderr, "{}{}\n", tag, fmt::format(f, std::forward<Args>(args)...));
  std::fflush(stderr);
}

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kInfo, "", f, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kWarn, "warning: ", f, std::forward<Args>(args)...);
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kDebug, "debug: ", f, std::forward<Args>(args)...);
}

}  // namespace headprune::log
