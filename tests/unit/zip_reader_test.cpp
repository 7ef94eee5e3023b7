// The zip directory reader on archives built byte by byte.
#include "precdetect/load/source/zip_reader.h"

#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/load/file_format.h"

namespace precdetect {
namespace {

void le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

/// One-entry archive: local header (with `local_extra` padding, as torch pads to 64 bytes), data, central
/// directory, end record.
std::string one_entry_zip(const std::string& name, const std::string& data, uint16_t method = 0,
                          size_t local_extra = 0) {
  std::string zip;
  le(zip, 0x04034b50, 4), le(zip, 20, 2), le(zip, 0, 2), le(zip, method, 2), le(zip, 0, 4), le(zip, 0, 4);
  le(zip, data.size(), 4), le(zip, data.size(), 4), le(zip, name.size(), 2), le(zip, local_extra, 2);
  zip += name + std::string(local_extra, 'Z') + data;
  size_t central = zip.size();
  le(zip, 0x02014b50, 4), le(zip, 20, 2), le(zip, 20, 2), le(zip, 0, 2), le(zip, method, 2), le(zip, 0, 4);
  le(zip, 0, 4), le(zip, data.size(), 4), le(zip, data.size(), 4), le(zip, name.size(), 2), le(zip, 0, 2);
  le(zip, 0, 2), le(zip, 0, 2), le(zip, 0, 2), le(zip, 0, 4), le(zip, 0, 4);
  zip += name;
  size_t central_size = zip.size() - central;
  le(zip, 0x06054b50, 4), le(zip, 0, 2), le(zip, 0, 2), le(zip, 1, 2), le(zip, 1, 2), le(zip, central_size, 4);
  le(zip, central, 4), le(zip, 0, 2);
  return zip;
}

void expect_invalid(const std::string& bytes, const std::string& detail) {
  try {
    read_zip_directory(*memory_source(bytes, "m.pt"));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidZip) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.pt: invalid zip archive at offset"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(ZipReader, FindsDataThroughThePaddedLocalHeader) {
  std::string zip = one_entry_zip("archive/data/0", "0123456789", 0, 17);
  auto source = memory_source(zip, "m.pt");
  EXPECT_EQ(detect_format(*source), FileFormat::kTorchZip);
  auto entries = read_zip_directory(*source);
  const ZipEntry& entry = entries.at("archive/data/0");
  EXPECT_EQ(entry.method, 0);
  EXPECT_EQ(entry.size, 10u);
  EXPECT_EQ(entry.data_offset, 30u + 14 + 17);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(source->view(entry.data_offset, 10).data()), 10), "0123456789");
}

TEST(ZipReader, DamageIsNamedWithItsOffset) {
  std::string zip = one_entry_zip("a/data.pkl", "payload");
  expect_invalid(zip.substr(0, zip.size() - 30), "no end-of-central-directory record");  // truncated
  expect_invalid("PK\x03\x04", "too small");
  std::string bad_local = zip;
  bad_local[0] = 'X';
  expect_invalid(bad_local, "bad local file header signature");
  std::string far_directory = zip;
  far_directory[far_directory.size() - 6] = '\x7f';  // central directory offset far past the end
  expect_invalid(far_directory, "central directory [");
  std::string many_entries = zip;
  many_entries[many_entries.size() - 12] = '\x09';  // claims 9 entries, holds 1
  expect_invalid(many_entries, "central directory entry 2 of 9 is missing");
}

}  // namespace
}  // namespace precdetect
