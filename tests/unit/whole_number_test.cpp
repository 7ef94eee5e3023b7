// core/whole_number.h: a whole number read all or nothing, the one parse behind a Retry-After, an error code from
// the HDF5 helper, a descriptor's file name, an ONNX dimension and an environment variable's count.
#include "precdetect/core/whole_number.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace precdetect {
namespace {

TEST(WholeNumber, DigitsAloneAreANumberAndAnythingElseIsNot) {
  EXPECT_EQ(whole_number<int>("0"), 0);
  EXPECT_EQ(whole_number<int>("206"), 206);
  EXPECT_EQ(whole_number<int>("-3"), -3);
  EXPECT_EQ(whole_number<uint64_t>("18446744073709551615"), UINT64_MAX);
  for (const char* text : {"", " 1", "1 ", "+1", "0x10", "1.5", "12abc", "HDF5-DIAG"})
    EXPECT_EQ(whole_number<int>(text), std::nullopt) << text;
}

TEST(WholeNumber, NoSignForAnUnsignedTypeAndNothingPastTheTypesRange) {
  EXPECT_EQ(whole_number<uint64_t>("-1"), std::nullopt);  // strtoull would give 2^64 - 1
  EXPECT_EQ(whole_number<uint64_t>("18446744073709551616"), std::nullopt);
  EXPECT_EQ(whole_number<int>("2147483648"), std::nullopt);
}

}  // namespace
}  // namespace precdetect
