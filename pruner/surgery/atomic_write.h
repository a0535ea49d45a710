// Writing files and folders so that a crash leaves either the old state or the complete new one.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace headprune::pruner {

/// Writes `content` to `file` through a temporary file in the same folder, then renames it over
/// `file` (atomic on POSIX). @throws headprune::Error on an I/O failure (the target untouched).
void write_file_atomic(const std::filesystem::path& file, const std::string& content);

/// Builds a folder atomically: `fill` writes into a fresh temporary folder beside `target`,
/// which is then renamed to `target`. On any exception the temporary folder is removed and
/// the exception propagates; `target` is untouched.
/// Refuses (headprune::Error) a `target` that exists and is not empty unless `force`; with
/// `force` the old folder is replaced only after the new one is complete.
void build_folder_atomic(const std::filesystem::path& target, bool force,
                         const std::function<void(const std::filesystem::path&)>& fill);

}  // namespace headprune::pruner
