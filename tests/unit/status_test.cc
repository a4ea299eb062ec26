#include "core/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace braid {
namespace {

Status failsAt(int step, int* reached) {
  for (int i = 0; i < 3; ++i) {
    *reached = i;
    BRAID_RETURN_IF_ERROR(i == step ? invalidArgument("step " + std::to_string(i)) : Status::ok());
  }
  return Status::ok();
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.message(), "");
}

TEST(Status, ReturnIfErrorStopsAtFirstFailure) {
  int reached = -1;
  Status s = failsAt(1, &reached);
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "step 1");
  EXPECT_TRUE(failsAt(7, &reached).isOk());
  EXPECT_EQ(reached, 2);
}

TEST(Status, WithContextPrefixesFailuresOnly) {
  EXPECT_EQ(timeoutError("rank 3").withContext("bootstrap").message(), "bootstrap: rank 3");
  EXPECT_EQ(timeoutError("x").withContext("y").code(), Code::kTimeout);
  EXPECT_EQ(Status::ok().withContext("ignored").message(), "");
}

TEST(Status, ErrnoErrorNamesCallAndReason) {
  Status s = errnoError("connect to 10.0.0.1:5", ECONNREFUSED);
  EXPECT_EQ(s.code(), Code::kSystemError);
  EXPECT_EQ(s.message(), "connect to 10.0.0.1:5: Connection refused");
}

TEST(Status, CodeNamesAreDistinct) {
  EXPECT_STREQ(codeName(Code::kInvalidArgument), "invalid argument");
  EXPECT_STREQ(codeName(Code::kTimeout), "timeout");
  EXPECT_STRNE(codeName(Code::kRemoteError), codeName(Code::kSystemError));
}

}  // namespace
}  // namespace braid
