#pragma once
// Shared fixtures: a tiny safetensors writer and pickle pieces, so parser tests are byte strings, not files on disk.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "precdetect/core/confinement.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect::testing {

/// Bytes read piecewise, as a remote file is: view_at_least() gives what it is asked and at most `window` bytes
/// in all, and every view's range is recorded, so that a test sees which bytes a parser touched.
class PiecewiseSource final : public ByteSource {
 public:
  PiecewiseSource(std::string bytes, uint64_t window)
      : file_(memory_source(std::move(bytes), "piecewise")), window_(window) {}
  const std::filesystem::path& path() const override { return file_->path(); }
  uint64_t size() const override { return file_->size(); }
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override {
    std::span<const std::byte> bytes = file_->view(offset, length);
    views.emplace_back(offset, length);
    return bytes;
  }
  std::span<const std::byte> view_at_least(uint64_t offset, uint64_t length) const override {
    return view(offset, std::max(length, std::min(window_, size() - std::min(offset, size()))));
  }
  /// True when a view touched a byte of [offset, offset + length).
  bool viewed(uint64_t offset, uint64_t length) const {
    for (auto [begin, size] : views)
      if (begin < offset + length && offset < begin + size) return true;
    return false;
  }
  mutable std::vector<std::pair<uint64_t, uint64_t>> views;  ///< (offset, length) of each view, in order

 private:
  std::unique_ptr<ByteSource> file_;
  uint64_t window_;
};

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
/// While it lives, this thread opens the files under `folder` as one model's (core/confinement.h): for tests that
/// open files themselves, where a scan's discover and open_checkpoint set the scope.
class AsModelFolder {
 public:
  explicit AsModelFolder(const std::filesystem::path& folder)
      : root_(model_root_of(folder, /*is_folder=*/true)), confined_(root_) {}

 private:
  ModelRoot root_;
  Confined confined_;
};

/// A fresh folder for the test, its files opened as one model's (AsModelFolder).
class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("precdetect-test-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(root_);
    as_model_.emplace(root_);
  }
  void TearDown() override {
    as_model_.reset();
    std::filesystem::remove_all(root_);
  }
  /// Writes `text` to `relative` under the folder, creating its parents.
  void write(const std::filesystem::path& relative, const std::string& text) {
    std::filesystem::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative, std::ios::binary | std::ios::trunc) << text;
  }
  std::filesystem::path root_;
  std::optional<AsModelFolder> as_model_;
};

/// A pickle's BINUNICODE opcode for `text`.
inline std::string unicode(const std::string& text) {
  std::string length(4, '\0');
  for (int i = 0; i < 4; ++i) length[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  return "X" + length + text;
}

/// A record of `name`, `dtype` and `shape` (its numel from the shape), as a header lists it: what a scheme links.
inline TensorRecord shaped_record(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  uint64_t numel = 1;
  for (int64_t side : shape) numel *= static_cast<uint64_t>(side);
  return {.name = name, .dtype = dtype, .shape = std::move(shape), .numel = numel};
}

}  // namespace precdetect::testing
