#include "pruner/surgery/atomic_write.h"

#include <fstream>
#include <random>

#include <fmt/format.h>
#include <unistd.h>

#include "models/errors.h"

namespace headprune::pruner {
namespace {

std::string unique_suffix() {
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  return fmt::format("{}.{:x}", ::getpid(), rng() & 0xffffffffULL);
}

}  // namespace

void write_file_atomic(const std::filesystem::path& file, const std::string& content) {
  const auto tmp = file.parent_path() / fmt::format(".{}.tmp.{}", file.filename().string(), unique_suffix());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw Error(fmt::format("cannot write {} (disk full or no permission?)", file.string()));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(fmt::format("cannot move the new {} into place: {}", file.string(), ec.message()));
  }
}

void build_folder_atomic(const std::filesystem::path& target, bool force,
                         const std::function<void(const std::filesystem::path&)>& fill) {
  namespace fs = std::filesystem;
  const bool exists = fs::exists(target);
  if (exists && !fs::is_directory(target))
    throw Error(fmt::format("--out {} exists and is not a folder", target.string()));
  if (exists && !fs::is_empty(target) && !force)
    throw Error(fmt::format("--out {} exists and is not empty; choose another folder or pass "
                            "--force to replace it",
                            target.string()));
  const auto parent = fs::absolute(target).parent_path();
  fs::create_directories(parent);
  const auto tmp = parent / fmt::format(".{}.partial.{}", target.filename().string(), unique_suffix());
  fs::create_directory(tmp);
  try {
    fill(tmp);
    if (exists) {
      const auto old = parent / fmt::format(".{}.old.{}", target.filename().string(), unique_suffix());
      fs::rename(target, old);
      fs::rename(tmp, target);
      fs::remove_all(old);
    } else {
      fs::rename(tmp, target);
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace headprune::pruner
