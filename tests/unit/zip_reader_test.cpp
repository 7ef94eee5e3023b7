// The zip directory reader on archives built byte by byte.
#include "precdetect/load/zip/zip_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/load/checkpoint.h"
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
    read_zip_entries(*memory_source(bytes, "m.pt"));
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
  auto entries = zip_directory(read_zip_entries(*source), source->path());
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

/// A memory source that counts the reads of its central directory's end record (the last 22 bytes).
class CountingSource final : public ByteSource {
 public:
  explicit CountingSource(std::string bytes) : bytes_(memory_source(std::move(bytes), "m.pt")) {}
  const std::filesystem::path& path() const override { return bytes_->path(); }
  uint64_t size() const override { return bytes_->size(); }
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override {
    if (offset + length > size() - 22) ++end_record_reads;
    return bytes_->view(offset, length);
  }
  mutable int end_record_reads = 0;

 private:
  std::unique_ptr<ByteSource> bytes_;
};

/// Records where a format says its pickles are.
struct Named final : PickleVisitor {
  void pickles(std::span<const std::byte>, const std::string& where, uint64_t, size_t) override {
    places.push_back(where);
  }
  void log(const pickle::PickleLog&, const std::string&) override {}
  void nested(const FormatFile&, const std::string&) override {}
  void unverified(const std::string& where, std::string_view why) override {
    places.push_back(fmt::format("unverified {}: {}", where, why));
  }
  void tampering(FileTampering kind, const std::string& where, std::string detail) override {
    places.push_back(fmt::format("{} {}: {}", kind, where, detail));
  }
  void chat_template(std::string_view, const std::string& where) override { places.push_back("template " + where); }
  void keras_config(std::string_view, const std::string& where) override { places.push_back("keras " + where); }
  void reaches(const std::string& where, const std::filesystem::path& target, std::string) override {
    places.push_back(fmt::format("reaches {}: {}", where, target.string()));
  }
  uint64_t decompression_left() const override { return uint64_t{1} << 30; }
  void decompressed(uint64_t) override {}
  std::vector<std::string> places;
};

TEST(ZipFormat, ReadsItsDirectoryOnceForItsReaderAndItsPickles) {
  const std::string empty_dict = "\x80\x02}.";  // PROTO 2, EMPTY_DICT, STOP
  Checkpoint checkpoint;
  checkpoint.files.push_back(std::make_unique<CountingSource>(one_entry_zip("archive/data.pkl", empty_dict)));
  const auto& source = static_cast<const CountingSource&>(*checkpoint.files[0]);
  std::unique_ptr<FormatFile> format = open_format(source);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->format(), FileFormat::kTorchZip);
  EXPECT_EQ(format->read(checkpoint, 0), FileFormat::kTorchZip);
  Named named;
  format->name_pickles("m.pt", named);
  EXPECT_EQ(named.places, std::vector<std::string>{"m.pt!archive/data.pkl"});
  EXPECT_EQ(source.end_record_reads, 1);
}

TEST(ZipFormat, ADamagedDirectoryFailsTheReaderAndIsUnverified) {
  std::string zip = one_entry_zip("archive/data.pkl", "payload");
  Checkpoint checkpoint;
  checkpoint.files.push_back(memory_source(zip.substr(0, zip.size() - 30), "m.pt"));
  std::unique_ptr<FormatFile> format = open_format(*checkpoint.files[0]);
  ASSERT_NE(format, nullptr);
  EXPECT_THROW(format->read(checkpoint, 0), Error);
  Named named;
  format->name_pickles("m.pt", named);
  ASSERT_EQ(named.places.size(), 1u);
  EXPECT_NE(named.places[0].find("unverified m.pt: m.pt: invalid zip archive"), std::string::npos) << named.places[0];
}

TEST(ZipFormat, AKerasArchiveNamesItsConfigAndNeedsItsWeights) {
  Checkpoint checkpoint;
  checkpoint.files.push_back(memory_source(one_entry_zip("config.json", R"({"class_name": "Sequential"})"), "m.keras"));
  std::unique_ptr<FormatFile> format = open_format(*checkpoint.files[0]);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->format(), FileFormat::kKeras);
  Named named;
  format->name_pickles("m.keras", named);
  EXPECT_EQ(named.places, std::vector<std::string>{"keras m.keras!config.json"});
  try {
    format->read(checkpoint, 0);
    FAIL() << "read without model.weights.h5";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNoWeights) << e.what();
  }
  // The same bytes under another name are a torch zip's to refuse, as keras.models.load_model goes by the name.
  EXPECT_EQ(detect_format(*memory_source(one_entry_zip("config.json", "{}"), "m.zip")), FileFormat::kTorchZip);
}

}  // namespace
}  // namespace precdetect
