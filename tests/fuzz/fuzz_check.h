// FUZZ_CHECK: an invariant of a fuzz target. A failure prints the condition
// and aborts, which libFuzzer (and the replaying ctest test) report as a
// crash with the input that caused it.
#ifndef IRONTUNE_TESTS_FUZZ_FUZZ_CHECK_H_
#define IRONTUNE_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#include "google/protobuf/stubs/logging.h"

#define FUZZ_CHECK(cond)                                               \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, \
                   __LINE__, #cond);                                   \
      std::abort();                                                    \
    }                                                                  \
  } while (0)

// Silences protobuf's log lines (one per invalid UTF-8 string parsed), which
// would otherwise drown the fuzzer's output. Call at the top of each entry.
inline void QuietProtobuf() {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
}

#endif  // IRONTUNE_TESTS_FUZZ_FUZZ_CHECK_H_
