#include "precdetect/core/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace precdetect {
namespace {

// Each case's verdict is Python's: `bytes.decode("utf-8")` (strict) accepts or raises.
struct Case {
  std::string bytes;
  bool valid;
};

const Case kCases[] = {
    {"", true},
    {"plain ASCII \x7f", true},
    {"\xc3\xa9", true},               // U+00E9
    {"\xe2\x82\xac", true},           // U+20AC
    {"\xf0\x9f\x98\x80", true},       // U+1F600
    {"\xf4\x8f\xbf\xbf", true},       // U+10FFFF, the last code point
    {"\xef\xbf\xbe", true},           // U+FFFE: a noncharacter, still UTF-8
    {"\x80", false},                  // a continuation byte first
    {"\xc0\xaf", false},              // '/' overlong in two bytes
    {"\xc1\xbf", false},              // overlong
    {"\xe0\x80\xaf", false},          // overlong in three bytes
    {"\xf0\x80\x80\xaf", false},      // overlong in four bytes
    {"\xed\xa0\x80", false},          // U+D800, a surrogate
    {"\xed\xbf\xbf", false},          // U+DFFF
    {"\xf4\x90\x80\x80", false},      // U+110000, past the last code point
    {"\xf5\x80\x80\x80", false},      // a lead byte no code point has
    {"\xf8\x88\x80\x80\x80", false},  // five bytes
    {"\xc3", false},                  // cut short by the end
    {"\xe2\x82", false},              // cut short by the end
    {"\xe2\x28\xa1", false},          // a second byte that is no continuation
    {std::string("a\0b", 3), true},   // NUL is a character
};

TEST(Utf8, AcceptsWhatPythonsStrictDecoderAccepts) {
  for (const Case& c : kCases) EXPECT_EQ(is_utf8(c.bytes), c.valid) << testing::PrintToString(c.bytes);
}

TEST(Utf8, DecodesEachCharacterToItsCodePointAndLength) {
  std::string text = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
  const Utf8Char expected[] = {{0x61, 1}, {0xE9, 2}, {0x20AC, 3}, {0x1F600, 4}};
  size_t at = 0;
  for (const Utf8Char& want : expected) {
    std::optional<Utf8Char> got = decode_utf8(text, at);
    ASSERT_TRUE(got) << "at " << at;
    EXPECT_EQ(got->code_point, want.code_point);
    EXPECT_EQ(got->length, want.length);
    at += got->length;
  }
  EXPECT_FALSE(decode_utf8(text, at)) << "past the end";
  EXPECT_FALSE(decode_utf8(text, 2)) << "inside a character";
}

TEST(Utf8, WritesCodePointsDecodeReadsBack) {
  for (uint32_t code_point : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFDu, 0x10000u, 0x10FFFFu}) {
    std::string out;
    append_utf8(out, code_point);
    std::optional<Utf8Char> back = decode_utf8(out, 0);
    ASSERT_TRUE(back) << code_point;
    EXPECT_EQ(back->code_point, code_point);
    EXPECT_EQ(back->length, out.size());
  }
}

}  // namespace
}  // namespace precdetect
