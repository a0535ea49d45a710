#include "pruner/atomic_write.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
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

/// What headprune wrote into `dir` the last time, by its manifest. @throws headprune::Error
/// when there is no readable manifest (then nothing there is known to be headprune's).
std::set<std::string> manifest_of(const fs::path& dir, const std::string& option) {
  const auto file = dir / kManifestFile;
  std::ifstream in(file);
  const auto j = fs::is_regular_file(fs::symlink_status(file)) ? nlohmann::json::parse(in, nullptr, false)
                                                               : nlohmann::json();
  if (!j.is_array() || !std::all_of(j.begin(), j.end(), [](const auto& v) { return v.is_string(); }))
    throw Error(fmt::format("--force replaces only what headprune wrote: {} {} has no readable record of a "
                            "headprune run ({}), so nothing in it is known to be headprune's; choose "
                            "another folder, or empty it yourself",
                            option, dir.string(), kManifestFile));
  std::set<std::string> ours;
  for (const auto& name : j) ours.insert(name.get<std::string>());
  return ours;
}

/// What kind of entry `status` is, for a refusal.
std::string kind_of(const fs::file_status& status) {
  switch (status.type()) {
    case fs::file_type::regular: return "file";
    case fs::file_type::directory: return "folder";
    case fs::file_type::symlink: return "symbolic link";
    case fs::file_type::fifo: return "FIFO";
    case fs::file_type::socket: return "socket";
    default: return "special file";
  }
}

/// Whether `name` (a relative path) is a folder that holds a manifest entry below it.
bool holds_recorded(const std::set<std::string>& ours, const std::string& name) {
  const auto prefix = name + "/";
  const auto it = ours.lower_bound(prefix);
  return it != ours.end() && it->compare(0, prefix.size(), prefix) == 0;
}

/// Whether `child` is `parent` or below it (paths made absolute, links resolved as far as they exist).
bool is_inside(const fs::path& child, const fs::path& parent) {
  auto c = fs::weakly_canonical(fs::absolute(child));
  auto p = fs::weakly_canonical(fs::absolute(parent));
  auto [pe, ce] = std::mismatch(p.begin(), p.end(), c.begin(), c.end());
  return pe == p.end();
}

}  // namespace

void check_replaceable_folder(const fs::path& dir, const std::string& option) {
  const auto ours = manifest_of(dir, option);
  std::vector<std::pair<std::string, fs::file_status>> entries;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it)
    entries.emplace_back(it->path().lexically_relative(dir).generic_string(), it->symlink_status());
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [name, status] : entries) {
    const bool recorded = status.type() == fs::file_type::regular ? (ours.count(name) || name == kManifestFile)
                          : status.type() == fs::file_type::directory ? holds_recorded(ours, name)
                                                                      : false;
    if (!recorded)
      throw Error(fmt::format("--force replaces only what headprune wrote: {} {} holds the {} '{}', which "
                              "headprune's record ({}) does not list; move it out or choose another folder "
                              "(nothing was written)",
                              option, dir.string(), kind_of(status), name, kManifestFile));
  }
}

void write_through(const fs::path& file, const std::function<void(const fs::path&)>& write, const fs::path& tmp) {
  const auto through =
      tmp.empty() ? file.parent_path() / fmt::format(".{}.tmp.{}", file.filename().string(), unique_suffix()) : tmp;
  std::error_code ec;
  try {
    write(through);
  } catch (...) {
    fs::remove(through, ec);
    throw;
  }
  fs::rename(through, file, ec);
  if (ec) {
    fs::remove(through, ec);
    throw Error(fmt::format("cannot move the new {} into place: {}", file.string(), ec.message()));
  }
}

void write_file_atomic(const fs::path& file, const std::string& content) {
  write_through(file, [&](const fs::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) throw Error(fmt::format("cannot write {} (disk full or no permission?)", file.string()));
  });
}

void build_folder_atomic(const fs::path& target, bool force, const std::function<void(const fs::path&)>& fill) {
  const bool exists = fs::exists(fs::symlink_status(target));
  if (exists && !fs::is_directory(fs::symlink_status(target)))
    throw Error(fmt::format("--out {} exists and is not a folder", target.string()));
  const bool replace = exists && !fs::is_empty(target);
  if (replace && !force)
    throw Error(fmt::format("--out {} exists and is not empty; choose another folder or pass "
                            "--force to replace it",
                            target.string()));
  if (replace) check_replaceable_folder(target);
  const auto parent = fs::absolute(target).parent_path();
  fs::create_directories(parent);
  const auto tmp = parent / fmt::format(".{}.partial.{}", target.filename().string(), unique_suffix());
  fs::create_directory(tmp);
  try {
    fill(tmp);
    write_file_atomic(tmp / kManifestFile, nlohmann::json(files_under(tmp)).dump(1) + "\n");
    if (replace) check_replaceable_folder(target);  // nothing of the user's arrived meanwhile
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  if (!replace) {  // new, or an empty folder (rename(2) replaces an empty folder)
    fs::rename(tmp, target);
    return;
  }
  const auto old = parent / fmt::format(".{}.old.{}", target.filename().string(), unique_suffix());
  fs::rename(target, old);
  fs::rename(tmp, target);
  std::error_code ec;
  fs::remove_all(old, ec);
  if (ec)
    throw Error(fmt::format("the new {} is in place, but the folder it replaced could not be removed from {} "
                            "({}); remove it yourself",
                            target.string(), old.string(), ec.message()));
}

void check_outside_input(const fs::path& source, const fs::path& out) {
  if (is_inside(out, source) && is_inside(source, out))
    throw Error(fmt::format("--out {} is the input {}; choose another folder (the input is never "
                            "modified)",
                            out.string(), source.string()));
  if (is_inside(out, source))
    throw Error(fmt::format("--out {} is inside the input folder {}; choose a folder outside it "
                            "(the input is never modified)",
                            out.string(), source.string()));
  if (is_inside(source, out))
    throw Error(fmt::format("--out {} contains the input folder {}; choose another folder",
                            out.string(), source.string()));
}

void check_export_target(const fs::path& source, const fs::path& out, bool force) {
  check_outside_input(source, out);
  if (fs::exists(out) && !fs::is_directory(out))
    throw Error(fmt::format("--out {} exists and is not a folder", out.string()));
  if (!fs::exists(out) || fs::is_empty(out)) return;
  if (!force)
    throw Error(fmt::format("--out {} exists and is not empty; choose another folder or pass "
                            "--force to replace it",
                            out.string()));
  check_replaceable_folder(out);
}

}  // namespace headprune::pruner
