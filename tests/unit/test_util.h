#pragma once
// Shared fixtures: a tiny safetensors writer and pickle pieces, so parser tests are byte strings, not files on disk.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace precdetect::testing {

/// The 8-byte little-endian length prefix followed by `header`, then `data`.
inline std::string safetensors_bytes(const std::string& header, const std::string& data = "") {
  std::string bytes(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  return bytes + header + data;
}

/// Raw little-endian bytes of a vector of trivially copyable values.
template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// A fixture with a fresh folder of its own (root_), removed after the test.
class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("precdetect-test-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  /// Writes `text` to `relative` under the folder, creating its parents.
  void write(const std::filesystem::path& relative, const std::string& text) {
    std::filesystem::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative, std::ios::binary | std::ios::trunc) << text;
  }
  std::filesystem::path root_;
};

/// A pickle's BINUNICODE opcode for `text`.
inline std::string unicode(const std::string& text) {
  std::string length(4, '\0');
  for (int i = 0; i < 4; ++i) length[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  return "X" + length + text;
}

}  // namespace precdetect::testing
