// Status propagation macros. Abseil 20220623 ships none, so accel defines its own.
//
//   ACCEL_RETURN_IF_ERROR(expr);            // expr yields absl::Status; returns it if not OK.
//   ACCEL_ASSIGN_OR_RETURN(auto x, expr);   // expr yields absl::StatusOr<T>; moves the value
//                                           // into x or returns its status.
//
// Both work in functions returning absl::Status or absl::StatusOr<U>.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ACCEL_STATUS_CONCAT_INNER_(a, b) a##b
#define ACCEL_STATUS_CONCAT_(a, b) ACCEL_STATUS_CONCAT_INNER_(a, b)

#define ACCEL_RETURN_IF_ERROR(expr)                         \
  do {                                                      \
    ::absl::Status accel_status_ = (expr);                  \
    if (!accel_status_.ok()) return accel_status_;          \
  } while (0)

#define ACCEL_ASSIGN_OR_RETURN(lhs, expr) \
  ACCEL_ASSIGN_OR_RETURN_IMPL_(ACCEL_STATUS_CONCAT_(accel_statusor_, __LINE__), lhs, expr)

#define ACCEL_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

// Prefixes a status message with context, keeping its code.
namespace accel {
inline absl::Status Annotate(const absl::Status& s, std::string_view context) {
  if (s.ok()) return s;
  return absl::Status(s.code(), std::string(context) + ": " + std::string(s.message()));
}
}  // namespace accel
