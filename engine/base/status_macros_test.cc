#include "engine/base/status_macros.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

// A move-only value that tracks how often it was moved.
struct MoveOnly {
  explicit MoveOnly(int v) : value(std::make_unique<int>(v)) {}
  MoveOnly(MoveOnly&& other) noexcept : value(std::move(other.value)), moves(other.moves + 1) {}
  MoveOnly& operator=(MoveOnly&& other) noexcept {
    value = std::move(other.value);
    moves = other.moves + 1;
    return *this;
  }
  std::unique_ptr<int> value;
  int moves = 0;
};

absl::Status Fail(absl::StatusCode code, int* calls) {
  ++*calls;
  return absl::Status(code, "the original message");
}

absl::StatusOr<MoveOnly> MakeValue(int v, int* calls) {
  ++*calls;
  if (v < 0) return absl::OutOfRangeError(absl::StrCat("negative: ", v));
  return MoveOnly(v);
}

// ---- ACCEL_RETURN_IF_ERROR -------------------------------------------------------------------

absl::Status ReturnIfErrorInStatus(absl::StatusCode code, int* calls, bool* reached_end) {
  ACCEL_RETURN_IF_ERROR(Fail(code, calls));
  *reached_end = true;
  return absl::OkStatus();
}

absl::StatusOr<int> ReturnIfErrorInStatusOr(absl::StatusCode code, int* calls) {
  ACCEL_RETURN_IF_ERROR(Fail(code, calls));
  return 42;
}

TEST(StatusMacrosTest, ReturnIfErrorPropagatesUnchanged) {
  int calls = 0;
  bool reached = false;
  absl::Status s = ReturnIfErrorInStatus(absl::StatusCode::kDataLoss, &calls, &reached);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "the original message");
  EXPECT_FALSE(reached);
  EXPECT_EQ(calls, 1);  // the expression is evaluated once

  absl::StatusOr<int> r = ReturnIfErrorInStatusOr(absl::StatusCode::kNotFound, &calls);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "the original message");
  EXPECT_EQ(calls, 2);
}

TEST(StatusMacrosTest, ReturnIfErrorContinuesOnOk) {
  int calls = 0;
  bool reached = false;
  EXPECT_TRUE(ReturnIfErrorInStatus(absl::StatusCode::kOk, &calls, &reached).ok());
  EXPECT_TRUE(reached);
  absl::StatusOr<int> r = ReturnIfErrorInStatusOr(absl::StatusCode::kOk, &calls);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 42);
}

// The do/while form makes it one statement, safe in an unbraced if/else.
absl::Status InIfElse(bool first, int* calls) {
  if (first)
    ACCEL_RETURN_IF_ERROR(Fail(absl::StatusCode::kAborted, calls));
  else
    ACCEL_RETURN_IF_ERROR(Fail(absl::StatusCode::kCancelled, calls));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorIsOneStatement) {
  int calls = 0;
  EXPECT_EQ(InIfElse(true, &calls).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(InIfElse(false, &calls).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(calls, 2);
}

// ---- ACCEL_ASSIGN_OR_RETURN ------------------------------------------------------------------

absl::Status AssignInStatus(int a, int b, int* out, int* moves, int* calls) {
  ACCEL_ASSIGN_OR_RETURN(MoveOnly x, MakeValue(a, calls));
  ACCEL_ASSIGN_OR_RETURN(auto y, MakeValue(b, calls));  // a second use in the same scope
  *out = *x.value + *y.value;
  *moves = x.moves;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> AssignInStatusOr(int a, int* calls) {
  ACCEL_ASSIGN_OR_RETURN(MoveOnly x, MakeValue(a, calls));
  return std::move(x.value);
}

absl::Status AssignToExisting(int a, MoveOnly* existing, int* calls) {
  ACCEL_ASSIGN_OR_RETURN(*existing, MakeValue(a, calls));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnMovesTheValue) {
  int out = 0, moves = 0, calls = 0;
  ASSERT_TRUE(AssignInStatus(3, 4, &out, &moves, &calls).ok());
  EXPECT_EQ(out, 7);
  EXPECT_EQ(calls, 2);
  // Constructed into the StatusOr (one move from the temporary), then moved out into x: never
  // copied (a copy would not compile) and not moved more than needed.
  EXPECT_LE(moves, 2);

  absl::StatusOr<std::unique_ptr<int>> p = AssignInStatusOr(9, &calls);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(**p, 9);

  MoveOnly existing(0);
  ASSERT_TRUE(AssignToExisting(5, &existing, &calls).ok());
  EXPECT_EQ(*existing.value, 5);
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesUnchanged) {
  int out = -1, moves = 0, calls = 0;
  absl::Status s = AssignInStatus(1, -2, &out, &moves, &calls);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(), "negative: -2");
  EXPECT_EQ(out, -1);  // stopped before the end
  EXPECT_EQ(calls, 2);

  s = AssignInStatus(-1, 2, &out, &moves, &calls);
  EXPECT_EQ(s.message(), "negative: -1");
  EXPECT_EQ(calls, 3);  // the second expression never ran

  absl::StatusOr<std::unique_ptr<int>> p = AssignInStatusOr(-7, &calls);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(p.status().message(), "negative: -7");

  MoveOnly existing(11);
  EXPECT_FALSE(AssignToExisting(-1, &existing, &calls).ok());
  EXPECT_EQ(*existing.value, 11);  // left alone on error
}

// ---- Annotate --------------------------------------------------------------------------------

TEST(StatusMacrosTest, AnnotatePrefixesAndKeepsTheCode) {
  absl::Status s = Annotate(absl::DataLossError("offset 12: bad crc"), "reading ckpt/shard_0");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "reading ckpt/shard_0: offset 12: bad crc");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "context").ok());
  EXPECT_EQ(Annotate(Annotate(absl::NotFoundError("x"), "inner"), "outer").message(),
            "outer: inner: x");
}

}  // namespace
}  // namespace accel
