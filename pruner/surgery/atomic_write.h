// Writing files and folders so that a crash leaves either the old state or the complete new one.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace headprune::pruner {

/// Writes `content` to `file` through a temporary file in the same folder, then renames it over
/// `file` (atomic on POSIX). @throws headprune::Error on an I/O failure (the target untouched).
void write_file_atomic(const std::filesystem::path& file, const std::string& content);

/// Every folder headprune builds lists the files it wrote here (a JSON list of relative
/// paths), so that a later --force replaces exactly those.
inline constexpr const char* kManifestFile = ".headprune-files.json";

/// What replacing a folder did with files headprune had not written there.
struct FolderReplacement {
  std::vector<std::string> kept;      ///< carried into the new folder unchanged
  std::vector<std::string> replaced;  ///< the new folder has a file of the same name
  std::filesystem::path left_in;      ///< set if the old folder could not be emptied
  /// One warning line per non-empty field.
  std::vector<std::string> messages() const;
};

/// Builds a folder atomically: `fill` writes into a fresh temporary folder beside `target`,
/// then kManifestFile is written and the folder renamed to `target`. On any exception the
/// temporary folder is removed and the exception propagates; `target` is untouched.
/// Refuses (headprune::Error) a `target` that exists and is not empty unless `force`. With
/// `force` the old folder is replaced only after the new one is complete, and only what
/// headprune wrote there (its manifest, and anything under headprune/) goes: other files are
/// moved into the new folder, or replaced if it has the same name; the result says which.
FolderReplacement build_folder_atomic(const std::filesystem::path& target, bool force,
                                      const std::function<void(const std::filesystem::path&)>& fill);

}  // namespace headprune::pruner
