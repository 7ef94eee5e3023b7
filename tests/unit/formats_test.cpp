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

TEST(Msgpack, ReadsEveryKindAsViewsOfTheInput) {
  // {"a": [1, -1, 300, true, nil, 1.5], "b": bin(2), "c": ext(1, 3 bytes)}
  using namespace std::string_literals;
  std::string data =
      "\x83\xa1"
      "a\x96\x01\xff\xcd\x01\x2c\xc3\xc0\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"
      "\xa1"
      "b\xc4\x02xy\xa1"
      "c\xc7\x03\x01pqr"s;
  msgpack::Value root = msgpack::read(bytes_of(data), "t.msgpack");
  const msgpack::Array& a = *root.find("a")->array();
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].unsigned_value(), 1u);
  EXPECT_EQ(std::get<int64_t>(a[1].data), -1);
  EXPECT_EQ(a[2].unsigned_value(), 300u);
  EXPECT_TRUE(std::get<bool>(a[3].data));
  EXPECT_TRUE(std::holds_alternative<msgpack::Nil>(a[4].data));
  EXPECT_EQ(std::get<double>(a[5].data), 1.5);
  auto bin = std::get<msgpack::Binary>(root.find("b")->data).bytes;
  EXPECT_EQ(reinterpret_cast<const char*>(bin.data()), data.data() + data.find("xy"));  // a view, not a copy
  auto ext = std::get<msgpack::Extension>(root.find("c")->data);
  EXPECT_EQ(ext.type, 1);
  EXPECT_EQ(ext.offset, data.find("pqr"));
  EXPECT_EQ(root.find("d"), nullptr);
}

TEST(Msgpack, RefusesHostileBytesByName) {
  for (const std::string& bad : {std::string("\x92\x01", 2), std::string("\xc1"), std::string("\x01\x02"),
                                 std::string("\xdd\xff\xff\xff\xff"), std::string(70, '\x91') + "\x01"})
    EXPECT_EQ(code_of([&] { msgpack::read(bytes_of(bad), "t.msgpack"); }), ErrorCode::kInvalidMsgpack) << bad.size();
}

std::string deflate(const std::string& data) {
  z_stream stream{};
  deflateInit2(&stream, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

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
  EXPECT_EQ(dtype_kind(DType::Q4_0), DTypeKind::kQuantized);  // analyzed dequantized (quantize/ggml_blocks)
  EXPECT_EQ(dtype_kind(DType::IQ4_NL), DTypeKind::kSkipped);  // a lookup-table code: counted only
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
