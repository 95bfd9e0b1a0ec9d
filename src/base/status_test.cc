#include "base/status.h"

#include <gtest/gtest.h>

#include "base/mapped_file.h"

namespace xinfer {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("{} is odd", x);
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  XI_ASSIGN_OR_RETURN(int h, Half(x));
  XI_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, PropagatesFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().ToString(), "InvalidArgument: 3 is odd");
  EXPECT_EQ(bad.status().WithContext("loading").message(), "loading: 3 is odd");
}

TEST(MappedFileTest, MissingFileIsNotFound) {
  auto f = MappedFile::Open("/nonexistent/xinfer/file");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/xinfer/file"), std::string::npos);
}

TEST(MappedFileTest, DirectoryIsRejected) {
  auto f = MappedFile::Open("/tmp");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace xinfer
