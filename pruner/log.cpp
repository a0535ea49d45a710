#include "pruner/log.h"

#include "models/errors.h"

namespace headprune::log {

Level& level() {
  static Level current = Level::kInfo;
  return current;
}

Level parse_level(const std::string& name) {
  if (name == "error") return Level::kError;
  if (name == "warn" || name == "warning") return Level::kWarn;
  if (name == "info") return Level::kInfo;
  if (name == "debug") return Level::kDebug;
  throw UsageError(fmt::format("--log-level: '{}' is not one of error, warn, info, debug", name));
}

}  // namespace headprune::log
