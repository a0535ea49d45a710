// Writing files and folders so that a crash leaves either the old state or the complete new one,
// and the rules every output folder follows (--out outside the input; --force replaces only what
// headprune's record lists).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace headprune::pruner {

/// Writes `file` whole or not at all: `write(tmp)` fills a temporary file in the same folder
/// (`tmp`, or a unique hidden name beside `file` when empty), which is then renamed over `file`
/// (atomic on POSIX). On any failure the temporary file is removed and `file` is untouched.
/// @throws what `write` throws, or headprune::Error when the rename fails.
void write_through(const std::filesystem::path& file, const std::function<void(const std::filesystem::path&)>& write,
                   const std::filesystem::path& tmp = {});

/// write_through with `content` as the file's bytes.
/// @throws headprune::Error on an I/O failure (the target untouched).
void write_file_atomic(const std::filesystem::path& file, const std::string& content);

/// Every folder headprune builds lists the files it wrote here (a JSON list of relative
/// paths): its record of what a later --force may replace.
inline constexpr const char* kManifestFile = ".headprune-files.json";

/// Checks that --force may replace the folder `dir`: it holds nothing headprune did not write.
/// Every entry is looked at without following symbolic links: each regular file must be in the
/// folder's kManifestFile (or be that file), each folder must hold such a file somewhere below
/// it; a symbolic link, FIFO, socket or device, an empty folder, a file the record does not list
/// and a folder without a readable record are all refused. `option` names the flag in messages
/// ("--out").
/// @throws headprune::Error "--force replaces only what headprune wrote: ... 'NAME' ..." naming
///         the first entry in path order that is not headprune's.
void check_replaceable_folder(const std::filesystem::path& dir, const std::string& option = "--out");

/// Builds a folder atomically: `fill` writes into a fresh temporary folder beside `target`,
/// then kManifestFile is written and the folder renamed to `target`. On any exception the
/// temporary folder is removed and the exception propagates; `target` is untouched.
/// Refuses (headprune::Error) a `target` that exists and is not empty unless `force`; with
/// `force`, a `target` that holds anything headprune did not write (check_replaceable_folder) is
/// refused before `fill` runs, and checked again once the new folder is complete (a file the
/// user put there meanwhile stops the replacement; the new folder is removed). The old folder is
/// replaced only after the new one is complete.
void build_folder_atomic(const std::filesystem::path& target, bool force,
                         const std::function<void(const std::filesystem::path&)>& fill);

/// Checks that `out` is not `source`, inside it, or containing it (the input is never
/// modified). @throws headprune::Error saying what to change.
void check_outside_input(const std::filesystem::path& source, const std::filesystem::path& out);

/// Checks, before any work, that `out` can receive an export of `source`: not the same as,
/// inside, or containing `source`; empty or absent unless `force`.
/// @throws headprune::Error saying what to change.
void check_export_target(const std::filesystem::path& source, const std::filesystem::path& out,
                         bool force);

}  // namespace headprune::pruner
