// ThreadSanitizer annotations for Debian's absl::Mutex and absl::CondVar (scripts/sanitize.sh
// tsan preloads this library into every test, acceld and accel-worker process).
//
// Why: Debian's libabsl is not built with -fsanitize=thread, so the atomics inside
// absl::Mutex::Lock/Unlock are invisible to TSan and every field guarded by an absl::Mutex (the
// server's job manager, registry, event log; the stores and communicators) would be reported as
// a race. absl itself annotates its mutex for TSan only when it is compiled with TSan
// (ABSL_TSAN_MUTEX_* in mutex.cc). This library interposes the public entry points, calls the
// real ones (dlsym RTLD_NEXT) and adds the same __tsan_mutex_* annotations around them, so TSan
// sees each lock acquire and release. It also catches gRPC's own uses (gpr_mu is absl::Mutex).
//
// Limits: Await and CondVar::Wait are annotated as exclusive (accel never waits under a reader
// lock). Processes without TSan (ctest itself, shells) carry the library inertly: the __tsan_*
// symbols are weak and the interposers only forward.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

extern "C" {
void __tsan_mutex_pre_lock(void* addr, unsigned flags) __attribute__((weak));
void __tsan_mutex_post_lock(void* addr, unsigned flags, int recursion) __attribute__((weak));
int __tsan_mutex_pre_unlock(void* addr, unsigned flags) __attribute__((weak));
void __tsan_mutex_post_unlock(void* addr, unsigned flags) __attribute__((weak));
void AnnotateIgnoreReadsBegin(const char* file, int line) __attribute__((weak));
void AnnotateIgnoreReadsEnd(const char* file, int line) __attribute__((weak));
}

namespace {

// Flag values from <sanitizer/tsan_interface.h>.
constexpr unsigned kReadLock = 1u << 3;
constexpr unsigned kTryLock = 1u << 4;
constexpr unsigned kTryLockFailed = 1u << 5;

#define ACCEL_STR2(x) #x
#define ACCEL_STR(x) ACCEL_STR2(x)

// The real function `suffix` of absl's versioned namespace, e.g. "5Mutex4LockEv".
template <typename Fn>
Fn Real(const char* suffix) {
  const char* ns = ACCEL_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name =
      std::string("_ZN4absl") + std::to_string(std::strlen(ns)) + ns + suffix;
  void* p = dlsym(RTLD_NEXT, name.c_str());
  if (p == nullptr) {
    std::fprintf(stderr, "tsan_absl_mutex: %s not found\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(p);
}

// Some real entry points call others through the PLT (AwaitWithTimeout calls
// AwaitWithDeadline), which lands here again: only the outermost call on a thread annotates.
thread_local int depth = 0;
struct Outer {
  Outer() { ++depth; }
  ~Outer() { --depth; }
  Outer(const Outer&) = delete;
  Outer& operator=(const Outer&) = delete;
};

bool Tsan() { return __tsan_mutex_pre_lock != nullptr && depth == 1; }
void PreLock(void* m, unsigned f) {
  if (Tsan()) __tsan_mutex_pre_lock(m, f);
}
void PostLock(void* m, unsigned f) {
  if (Tsan()) __tsan_mutex_post_lock(m, f, 0);
}
void PreUnlock(void* m, unsigned f) {
  if (Tsan()) __tsan_mutex_pre_unlock(m, f);
}
void PostUnlock(void* m, unsigned f) {
  if (Tsan()) __tsan_mutex_post_unlock(m, f);
}

// `call` acquires `m` (flags: kReadLock for a shared lock).
template <typename F>
auto AsLock(void* m, unsigned flags, F call) {
  PreLock(m, flags);
  auto r = call();
  PostLock(m, flags);
  return r;
}

// `call` waits with `m` held exclusively: it releases `m` and holds it again on return. To TSan
// an unlock and a lock, so what other threads did meanwhile under `m` happens-before the return.
template <typename F>
auto AsWait(void* m, F call) {
  PreUnlock(m, 0);
  PostUnlock(m, 0);
  return AsLock(m, 0, call);
}

using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;
using absl::Time;

// absl evaluates a waiter's condition on whichever thread releases the mutex, inside the real
// Unlock, after that thread's release as TSan sees it; absl's own TSan build ignores the reads
// of such evaluations (EvalConditionIgnored), and so does this wrapper.
struct IgnoredCondition {
  explicit IgnoredCondition(const Condition& c) : inner(&c), cond(&Eval, this) {}
  static bool Eval(IgnoredCondition* self) {
    if (AnnotateIgnoreReadsBegin != nullptr) AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    const bool r = self->inner->Eval();
    if (AnnotateIgnoreReadsEnd != nullptr) AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    return r;
  }
  const Condition* inner;
  Condition cond;
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// The real functions' mangled names after "_ZN4absl<namespace>".
#define ACCEL_REAL(type, suffix) \
  static auto real = Real<type>(suffix); \
  Outer outer

// ~Mutex is left alone: gRPC frees objects holding an absl::Mutex on another thread than the
// one that last locked it, ordered by reference counts inside libgrpc that TSan cannot see, so a
// __tsan_mutex_destroy there is reported as a race. TSan forgets the mutex when its memory is
// freed.

void Mutex::Lock() {
  ACCEL_REAL(void (*)(Mutex*), "5Mutex4LockEv");
  AsLock(this, 0, [&] { return (real(this), 0); });
}

void Mutex::ReaderLock() {
  ACCEL_REAL(void (*)(Mutex*), "5Mutex10ReaderLockEv");
  AsLock(this, kReadLock, [&] { return (real(this), 0); });
}

bool Mutex::TryLock() {
  ACCEL_REAL(bool (*)(Mutex*), "5Mutex7TryLockEv");
  PreLock(this, kTryLock);
  const bool ok = real(this);
  PostLock(this, kTryLock | (ok ? 0 : kTryLockFailed));
  return ok;
}

bool Mutex::ReaderTryLock() {
  ACCEL_REAL(bool (*)(Mutex*), "5Mutex13ReaderTryLockEv");
  PreLock(this, kReadLock | kTryLock);
  const bool ok = real(this);
  PostLock(this, kReadLock | kTryLock | (ok ? 0 : kTryLockFailed));
  return ok;
}

void Mutex::Unlock() {
  ACCEL_REAL(void (*)(Mutex*), "5Mutex6UnlockEv");
  PreUnlock(this, 0);
  real(this);
  PostUnlock(this, 0);
}

void Mutex::ReaderUnlock() {
  ACCEL_REAL(void (*)(Mutex*), "5Mutex12ReaderUnlockEv");
  PreUnlock(this, kReadLock);
  real(this);
  PostUnlock(this, kReadLock);
}

void Mutex::LockWhen(const Condition& cond) {
  ACCEL_REAL(void (*)(Mutex*, const Condition&), "5Mutex8LockWhenERKNS0_9ConditionE");
  AsLock(this, 0, [&] { return (real(this, IgnoredCondition(cond).cond), 0); });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  ACCEL_REAL(bool (*)(Mutex*, const Condition&, Duration),
             "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return AsLock(this, 0, [&] { return real(this, IgnoredCondition(cond).cond, timeout); });
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  ACCEL_REAL(bool (*)(Mutex*, const Condition&, Time),
             "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return AsLock(this, 0, [&] { return real(this, IgnoredCondition(cond).cond, deadline); });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  ACCEL_REAL(void (*)(Mutex*, const Condition&), "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  AsLock(this, kReadLock, [&] { return (real(this, IgnoredCondition(cond).cond), 0); });
}

void Mutex::Await(const Condition& cond) {
  ACCEL_REAL(void (*)(Mutex*, const Condition&), "5Mutex5AwaitERKNS0_9ConditionE");
  AsWait(this, [&] { return (real(this, IgnoredCondition(cond).cond), 0); });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  ACCEL_REAL(bool (*)(Mutex*, const Condition&, Duration),
             "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return AsWait(this, [&] { return real(this, IgnoredCondition(cond).cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  ACCEL_REAL(bool (*)(Mutex*, const Condition&, Time),
             "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return AsWait(this, [&] { return real(this, IgnoredCondition(cond).cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  ACCEL_REAL(void (*)(CondVar*, Mutex*), "7CondVar4WaitEPNS0_5MutexE");
  AsWait(mu, [&] { return (real(this, mu), 0); });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  ACCEL_REAL(bool (*)(CondVar*, Mutex*, Duration),
             "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return AsWait(mu, [&] { return real(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  ACCEL_REAL(bool (*)(CondVar*, Mutex*, Time), "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return AsWait(mu, [&] { return real(this, mu, deadline); });
}

ABSL_NAMESPACE_END
}  // namespace absl
