# IRONTUNE_THREAD_SAFETY: clang's thread-safety analysis over irontune's own
# code, its findings errors (set by the `fuzz` preset, whose fuzz_all builds
# every library that carries ABSL_GUARDED_BY). It checks the Abseil
# annotations (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED,
# ABSL_LOCKS_EXCLUDED) against absl::Mutex and absl::MutexLock; a
# std::mutex is not annotated by libstdc++, so guarded state uses
# absl::Mutex. Every dependency is a system package (their headers are
# -isystem, where clang does not warn), so only irontune's code is checked.
# Left out: -Wthread-safety-beta, clang's not yet settled checks (none fired
# on irontune's annotated files when tried; they may change from one clang
# to the next), and -Wthread-safety-negative, which would have every public
# method declare ABSL_LOCKS_EXCLUDED(mu_) (93 findings when tried).
option(IRONTUNE_THREAD_SAFETY
  "clang -Wthread-safety over irontune's code, as errors" OFF)
if(IRONTUNE_THREAD_SAFETY)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "IRONTUNE_THREAD_SAFETY needs clang (cmake --preset fuzz)")
  endif()
  add_compile_options(-Wthread-safety -Werror=thread-safety)
endif()
