// Paths used by the tests. Everything real the tests need is found through one setting each:
//   HEADPRUNE_MODEL_DIR   the all-MiniLM-L6-v2 folder (default: .cache/models/all-MiniLM-L6-v2,
//                         made by scripts/fetch-model)
//   HEADPRUNE_SHARED_DATA the shared real-data folder (default: ../shared/data)
//   HEADPRUNE_TEST_DEVICE the device the parity tests against HF run on (default cpu;
//                         scripts/gpu-check sets cuda)
// A missing folder fails the test with a message saying how to provide it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace headprune::testing {

inline std::filesystem::path source_dir() { return HEADPRUNE_SOURCE_DIR; }

inline std::filesystem::path fixture_path(const std::string& relative) {
  return source_dir() / "tests" / "fixtures" / relative;
}

inline std::filesystem::path env_or(const char* name, const std::filesystem::path& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::filesystem::path(value) : fallback;
}

/// An uneven --remove-heads plan for all-MiniLM-L6-v2 (6 layers of 12 heads): layer 2 emptied,
/// layer 4 untouched, the others cut by 1 to 5 heads (kept: 9 11 0 7 12 11).
inline const nlohmann::json kUnevenRemoval = {{"0", {0, 1, 2}},
                                              {"1", {11}},
                                              {"2", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
                                              {"3", {1, 3, 5, 7, 9}},
                                              {"5", {4}}};

/// HEADPRUNE_TEST_DEVICE (default cpu): where the parity tests run the models; their outputs are
/// compared on the CPU with the same tolerances. Fails the test if the device is unusable.
inline torch::Device test_device() {
  const char* name = std::getenv("HEADPRUNE_TEST_DEVICE");
  if (!name || !*name) return torch::kCPU;
  const torch::Device device(name);
  if (device.is_cuda() && !torch::cuda::is_available())
    CATCH_FAIL("HEADPRUNE_TEST_DEVICE=" << name << " but this LibTorch sees no CUDA device");
  return device;
}

/// The real all-MiniLM-L6-v2 checkpoint folder; fails the test if it is absent.
inline std::filesystem::path minilm_dir() {
  auto dir = env_or("HEADPRUNE_MODEL_DIR", source_dir() / ".cache/models/all-MiniLM-L6-v2");
  if (!std::filesystem::exists(dir / "config.json"))
    CATCH_FAIL("all-MiniLM-L6-v2 not found at " << dir
         << ": run scripts/fetch-model or set HEADPRUNE_MODEL_DIR");
  return dir;
}

/// The shared real-data folder (corpus/, stsb/, ...); fails the test if it is absent.
inline std::filesystem::path shared_data_dir() {
  auto dir = env_or("HEADPRUNE_SHARED_DATA", source_dir() / "../shared/data");
  if (!std::filesystem::exists(dir / "README.md"))
    CATCH_FAIL("shared data not found at " << dir << ": set HEADPRUNE_SHARED_DATA");
  return dir;
}

/// A whole file as bytes (empty if it cannot be read).
inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Bytes of tensor data in a safetensors file: its size less the 8-byte length and the header
/// (whose length varies with its text).
inline int64_t safetensors_data_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char len[8] = {};
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | len[i];
  return static_cast<int64_t>(std::filesystem::file_size(file)) - 8 - static_cast<int64_t>(header);
}

/// The folders temp_dir made; removed when the test process exits (exports and ONNX files add
/// up to gigabytes per run), unless HEADPRUNE_KEEP_TEST_FILES is set (for looking inside).
class TempDirs {
 public:
  ~TempDirs() {
    if (std::getenv("HEADPRUNE_KEEP_TEST_FILES")) return;
    std::error_code ignored;
    for (const auto& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }
  void add(const std::filesystem::path& dir) { dirs_.push_back(dir); }

 private:
  std::vector<std::filesystem::path> dirs_;
};

/// A fresh empty temporary folder under the system temp dir, unique across the test processes
/// ctest runs in parallel (process id + a per-process counter); removed at process exit.
inline std::filesystem::path temp_dir(const std::string& tag) {
  static int counter = 0;
  static TempDirs made;
  auto dir = std::filesystem::temp_directory_path() /
             ("headprune-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  made.add(dir);
  return dir;
}

}  // namespace headprune::testing
