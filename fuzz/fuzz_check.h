// What every fuzz target shares: a check that aborts with a message (so libFuzzer saves the
// input and the replay test fails), the input as bytes in an in-memory file, and the "every
// error is one of these codes and names the file" check.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "engine/base/env.h"

namespace accel::fuzz {

[[noreturn]] inline void Fail(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n  %s\n", file, line, cond,
               msg.c_str());
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond, msg)                                                \
  do {                                                                       \
    if (!(cond)) ::accel::fuzz::Fail(__FILE__, __LINE__, #cond, (msg));     \
  } while (0)

// Writes `data` to `path` (its folder created) in `env`, a MemEnv; aborts if the env refuses
// (a harness bug).
inline void PutFile(Env* env, const std::string& path, std::string_view data) {
  FUZZ_CHECK(env->CreateDirs(DirName(path)).ok(), "mkdir");
  auto file = env->NewWritableFile(path);
  FUZZ_CHECK(file.ok(), file.status().ToString());
  FUZZ_CHECK((*file)->Append(data).ok(), "append");
  FUZZ_CHECK((*file)->Close().ok(), "close");
}

// An error from a reader of untrusted bytes: one of `codes`, and a message that contains
// `must_mention` (the file's name) when that is non-empty.
inline void CheckError(const absl::Status& s, std::initializer_list<absl::StatusCode> codes,
                       std::string_view must_mention) {
  bool known = false;
  for (absl::StatusCode c : codes) known = known || s.code() == c;
  FUZZ_CHECK(known, "unexpected error code: " + s.ToString());
  FUZZ_CHECK(!s.message().empty(), "empty error message");
  if (!must_mention.empty()) {
    FUZZ_CHECK(s.message().find(std::string(must_mention)) != absl::string_view::npos,
               "error does not name " + std::string(must_mention) + ": " + s.ToString());
  }
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace accel::fuzz
