// The pieces under the new weight formats (issue 24), on bytes built here: the msgpack reader, bounded inflation
// with its CRC, block-quantized sizes, decoded regions, and Flax's PyTorch names. The formats themselves are
// tested end to end on files their own writers made (tests/e2e/test_formats.py).
#include <gtest/gtest.h>
#include <zlib.h>

#include "precdetect/core/dtype.h"
#include "precdetect/core/error.h"
#include "precdetect/core/inflate.h"
#include "precdetect/load/flax/flax.h"
#include "precdetect/load/flax/msgpack.h"
#include "precdetect/load/source/decoded_source.h"
#include "zlib_stream.h"

namespace precdetect {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) { return std::as_bytes(std::span(text)); }

ErrorCode code_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;
}

/// A file read as a remote one is: every view() recorded, and view_at_least() giving only the bytes asked for.
class RecordingSource final : public ByteSource {
 public:
  explicit RecordingSource(std::string bytes) : bytes_(std::move(bytes)) {}
  const std::filesystem::path& path() const override { return path_; }
  uint64_t size() const override { return bytes_.size(); }
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override {
    viewed.push_back({offset, length});
    return bytes_of(bytes_).subspan(offset, length);
  }
  mutable std::vector<ByteRange> viewed;

 private:
  std::string bytes_;
  std::filesystem::path path_ = "t.msgpack";
};

using namespace std::string_literals;

// {"a": [1, -1, 300, true, nil, 1.5], "b": bin(2), "c": ext(1, 3 bytes)}
const std::string kEveryKind =
    "\x83\xa1"
    "a\x96\x01\xff\xcd\x01\x2c\xc3\xc0\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"
    "\xa1"
    "b\xc4\x02xy\xa1"
    "c\xc7\x03\x01pqr"s;

msgpack::Value read_all(const ByteSource& source) { return msgpack::read(source, 0, source.size()); }

TEST(Msgpack, ReadsEveryKindWithBinariesAsPlacesInTheFile) {
  auto source = memory_source(kEveryKind, "t.msgpack");
  msgpack::Value root = read_all(*source);
  const msgpack::Array& a = *root.find("a")->array();
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].unsigned_value(), 1u);
  EXPECT_EQ(std::get<int64_t>(a[1].data), -1);
  EXPECT_EQ(a[2].unsigned_value(), 300u);
  EXPECT_TRUE(std::get<bool>(a[3].data));
  EXPECT_TRUE(std::holds_alternative<msgpack::Nil>(a[4].data));
  EXPECT_EQ(std::get<double>(a[5].data), 1.5);
  auto bin = std::get<msgpack::Binary>(root.find("b")->data);
  EXPECT_EQ(bin.offset, kEveryKind.find("xy"));
  EXPECT_EQ(bin.size, 2u);
  auto ext = std::get<msgpack::Extension>(root.find("c")->data);
  EXPECT_EQ(ext.type, 1);
  EXPECT_EQ(ext.offset, kEveryKind.find("pqr"));
  EXPECT_EQ(ext.size, 3u);
  EXPECT_EQ(root.find("d"), nullptr);
  // A window is the source's rest: strings are views of its bytes, not copies.
  EXPECT_EQ(root.map()->keys[0].text()->data(), reinterpret_cast<const char*>(source->view(0, 1).data()) + 2);
}

TEST(Msgpack, ReadingPiecewiseNeverViewsABinaryOrAnExtensionPayload) {
  RecordingSource source(kEveryKind);
  msgpack::Value root = read_all(source);
  EXPECT_EQ(root.map()->keys.size(), 3u);
  ASSERT_FALSE(source.viewed.empty());
  for (auto [offset, length] : source.viewed) {
    for (std::string_view payload : {"xy", "pqr"}) {
      uint64_t begin = kEveryKind.find(payload), end = begin + payload.size();
      EXPECT_TRUE(offset + length <= begin || offset >= end) << offset << "+" << length << " covers " << payload;
    }
  }
}

TEST(Msgpack, RefusesHostileBytesByName) {
  for (const std::string& bad : {std::string("\x92\x01", 2), std::string("\xc1"), std::string("\x01\x02"),
                                 std::string("\xdd\xff\xff\xff\xff"), std::string(70, '\x91') + "\x01",
                                 std::string("\xc6\x00\x01\x00\x00xy"), std::string("\xc9\x00\x01\x00\x00\x01xy")}) {
    EXPECT_EQ(code_of([&] { read_all(*memory_source(bad, "t.msgpack")); }), ErrorCode::kInvalidMsgpack) << bad.size();
    RecordingSource piecewise(bad);
    EXPECT_EQ(code_of([&] { read_all(piecewise); }), ErrorCode::kInvalidMsgpack) << bad.size();
  }
}

TEST(Msgpack, ABinaryPastTheEndNamesWhereItStarts) {
  try {
    read_all(*memory_source(std::string("\x91\xc4\x05xy", 5), "t.msgpack"));
    FAIL() << "read a binary past the end";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "t.msgpack: invalid msgpack at offset 1: truncated: 5 more bytes needed");
  }
}

/// Raw deflate, as a zip member holds it.
std::string deflate(const std::string& data) { return zlib_stream(data, -MAX_WBITS, 9); }

TEST(Inflate, SkipsTheHeadAndChecksSizeAndCrc) {
  std::string data = "HEADER" + std::string(5000, 'x') + "tail";
  std::string packed = deflate(data);
  auto crc = static_cast<uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
  std::string rest(data.size() - 6, '\0');
  inflate_into(bytes_of(packed), 6, std::as_writable_bytes(std::span(rest)), "a.npz", "w.npy", crc);
  EXPECT_EQ(rest, data.substr(6));
  EXPECT_EQ(inflate_head(bytes_of(packed), 6, "a.npz", "w.npy"), "HEADER");
  auto into = [&](size_t size, std::optional<uint32_t> expected) {
    std::string out(size, '\0');
    return code_of(
        [&] { inflate_into(bytes_of(packed), 0, std::as_writable_bytes(std::span(out)), "a.npz", "w", expected); });
  };
  EXPECT_EQ(into(data.size(), crc ^ 1), ErrorCode::kInvalidZip);  // a CRC that does not match
  EXPECT_EQ(into(data.size() - 1, crc), ErrorCode::kInvalidZip);  // the stream runs longer
  EXPECT_EQ(into(data.size() + 1, crc), ErrorCode::kInvalidZip);  // or shorter
  EXPECT_EQ(code_of([&] { inflate_entry(bytes_of(packed), uint64_t{1} << 40, "a.npz", "w"); }),
            ErrorCode::kInvalidZip);  // more than deflate can make: never allocated
  EXPECT_EQ(code_of([&] { inflate_entry(bytes_of(packed.substr(0, packed.size() / 2)), data.size(), "a.npz", "w"); }),
            ErrorCode::kInvalidZip);
}

TEST(DType, BlockQuantizedBytesAreWholeBlocks) {
  EXPECT_EQ(dtype_bytes(DType::Q8_0, 64), 68u);    // 2 blocks of 34 bytes (ggml's block_q8_0)
  EXPECT_EQ(dtype_bytes(DType::Q4_K, 512), 288u);  // 2 blocks of 144
  EXPECT_EQ(dtype_bytes(DType::Q4_K, 100), std::nullopt);
  EXPECT_EQ(dtype_bytes(DType::F4, 3), std::nullopt);
  EXPECT_EQ(dtype_bytes(DType::BF16, 3), 6u);
  EXPECT_EQ(dtype_bytes(DType::F64, uint64_t{1} << 62), std::nullopt);
  EXPECT_EQ(parse_dtype("Q4_0"), std::nullopt);               // not a safetensors dtype
  EXPECT_EQ(dtype_kind(DType::Q4_0), DTypeKind::kQuantized);  // analyzed dequantized (kernel/ggml_blocks)
  EXPECT_EQ(dtype_kind(DType::IQ4_NL), DTypeKind::kQuantized);
  EXPECT_EQ(dtype_kind(DType::Q8_K), DTypeKind::kSkipped);  // ggml has no to_float for it: counted only
  EXPECT_EQ(dtype_block_values(DType::Q6_K), 256u);
  EXPECT_EQ(dtype_block_values(DType::F16), 0u);
  EXPECT_TRUE(is_analyzed(DType::Q8_0) && is_analyzed(DType::BF16) && !is_analyzed(DType::I8));
}

TEST(DecodedSource, DecodesWhenViewedAndDropsWhenReleased) {
  int decodes = 0;
  DecodedSource source(memory_source("file", "m.npz"));
  uint64_t at = source.add_region(3, [&](std::span<std::byte> dest) {
    ++decodes;
    std::memcpy(dest.data(), "abc", 3);
  });
  EXPECT_EQ(at, 4u);
  EXPECT_EQ(source.size(), 7u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(source.view(at + 1, 2).data()), 2), "bc");
  source.view(at, 3);
  EXPECT_EQ(decodes, 1);
  source.release(at, 3);
  source.view(at, 3);
  EXPECT_EQ(decodes, 2);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(source.view(0, 4).data()), 4), "file");
  EXPECT_EQ(code_of([&] { source.view(2, 4); }), ErrorCode::kOffsetPastEnd);  // across the file's end
  EXPECT_EQ(code_of([&] { source.view(at, 4); }), ErrorCode::kOffsetPastEnd);
}

TEST(Flax, PyTorchNamesAsTransformersConvertsThem) {
  EXPECT_EQ(torch_name_of_flax_path("shared/embedding"), "shared.weight");
  EXPECT_EQ(torch_name_of_flax_path("encoder/block/0/layer/0/SelfAttention/q/kernel"),
            "encoder.block.0.layer.0.SelfAttention.q.weight");
  EXPECT_EQ(torch_name_of_flax_path("encoder/final_layer_norm/scale"), "encoder.final_layer_norm.weight");
  EXPECT_EQ(torch_name_of_flax_path("lm_head/bias"), "lm_head.bias");
}

}  // namespace
}  // namespace precdetect
