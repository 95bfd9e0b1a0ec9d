#include "base/json_int32.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace xinfer {
namespace {

template <class Json>
std::optional<int32_t> Parse(const char* text) {
  return JsonInt32(Json::parse(text));
}

template <class Json>
void ExpectInt32Range() {
  EXPECT_EQ(Parse<Json>("0"), 0);
  EXPECT_EQ(Parse<Json>("-7"), -7);
  EXPECT_EQ(Parse<Json>("2147483647"), 2147483647);
  EXPECT_EQ(Parse<Json>("-2147483648"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(Parse<Json>("2147483648"), std::nullopt);
  EXPECT_EQ(Parse<Json>("-2147483649"), std::nullopt);
  // 2^32 + 1 would wrap to 1 as int32, 2^64 - 1 to -1 as int64.
  EXPECT_EQ(Parse<Json>("4294967297"), std::nullopt);
  EXPECT_EQ(Parse<Json>("18446744073709551615"), std::nullopt);
  EXPECT_EQ(Parse<Json>("-9223372036854775808"), std::nullopt);
  // Not integers: no truncation of a float, no exception for a string.
  EXPECT_EQ(Parse<Json>("1.0"), std::nullopt);
  EXPECT_EQ(Parse<Json>("\"5\""), std::nullopt);
  EXPECT_EQ(Parse<Json>("true"), std::nullopt);
  EXPECT_EQ(Parse<Json>("null"), std::nullopt);
}

TEST(JsonInt32Test, AcceptsExactlyTheInt32Range) {
  ExpectInt32Range<nlohmann::json>();
  ExpectInt32Range<nlohmann::ordered_json>();
}

}  // namespace
}  // namespace xinfer
