#include "pruner/surgery/atomic_write.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "models/errors.h"

namespace headprune::pruner {
namespace {

std::string unique_suffix() {
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  return fmt::format("{}.{:x}", ::getpid(), rng() & 0xffffffffULL);
}

namespace fs = std::filesystem;

/// The regular files under `dir`, as relative paths, sorted.
std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) out.push_back(entry.path().lexically_relative(dir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

/// What headprune wrote into `dir` the last time, by its manifest (empty if none or unreadable:
/// then nothing counts as ours, which errs on keeping files).
std::set<std::string> manifest_of(const fs::path& dir) {
  std::set<std::string> ours;
  std::ifstream in(dir / kManifestFile);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_array())
    for (const auto& name : j)
      if (name.is_string()) ours.insert(name.get<std::string>());
  return ours;
}

/// Files of `dir` headprune did not write: not in its manifest, not under headprune/ (the
/// tool's own namespace in an export), not the manifest itself.
std::vector<std::string> unrelated_files(const fs::path& dir) {
  const auto ours = manifest_of(dir);
  std::vector<std::string> out;
  for (const auto& name : files_under(dir))
    if (!ours.count(name) && name != kManifestFile && name.rfind("headprune/", 0) != 0)
      out.push_back(name);
  return out;
}

/// Moves the unrelated files of the replaced folder `old` into the new `target`; one the new
/// folder also has is replaced (and reported). Returns what the caller must tell the user.
/// Leaves `old` in place (and says so) if a move fails, so that nothing is lost.
FolderReplacement carry_unrelated(const fs::path& old, const fs::path& target) {
  FolderReplacement r;
  for (const auto& name : unrelated_files(old)) {
    if (fs::exists(target / name)) {
      r.replaced.push_back(name);
      continue;
    }
    std::error_code ec;
    fs::create_directories((target / name).parent_path(), ec);
    fs::rename(old / name, target / name, ec);
    if (ec) r.left_in = old;
    else r.kept.push_back(name);
  }
  if (r.left_in.empty()) fs::remove_all(old);
  return r;
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

FolderReplacement build_folder_atomic(const fs::path& target, bool force,
                                      const std::function<void(const fs::path&)>& fill) {
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
    write_file_atomic(tmp / kManifestFile, nlohmann::json(files_under(tmp)).dump(1) + "\n");
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  if (!exists) {
    fs::rename(tmp, target);
    return {};
  }
  const auto old = parent / fmt::format(".{}.old.{}", target.filename().string(), unique_suffix());
  fs::rename(target, old);
  fs::rename(tmp, target);
  return carry_unrelated(old, target);
}

std::vector<std::string> FolderReplacement::messages() const {
  std::vector<std::string> out;
  if (!kept.empty())
    out.push_back(fmt::format("kept {} file(s) in --out that headprune did not write: {}", kept.size(),
                              fmt::join(kept, ", ")));
  if (!replaced.empty())
    out.push_back(fmt::format("replaced {} file(s) in --out that headprune had not recorded writing: {}",
                              replaced.size(), fmt::join(replaced, ", ")));
  if (!left_in.empty())
    out.push_back(fmt::format("could not move every earlier file into the new --out; the old "
                              "folder is left at {}",
                              left_in.string()));
  return out;
}

}  // namespace headprune::pruner
