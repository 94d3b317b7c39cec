# IRONTUNE_THREAD_SAFETY: clang's thread-safety analysis over irontune's own
# code, its findings errors (set by the `fuzz` preset, whose fuzz_all builds
# every library that carries ABSL_GUARDED_BY). It checks the Abseil
# annotations (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED,
# ABSL_LOCKS_EXCLUDED) against absl::Mutex and absl::MutexLock; a
# std::mutex is not annotated by libstdc++, so guarded state uses
# absl::Mutex. Every dependency is a system package (their headers are
# -isystem, where clang does not warn), so only irontune's code is checked.
# -Wthread-safety-beta is left out: clang 14's beta checks add nothing for
# how irontune locks (no scoped-lockable smart pointers or try-locks) and
# change between releases, which would make the check flaky across clangs.
option(IRONTUNE_THREAD_SAFETY
  "clang -Wthread-safety over irontune's code, as errors" OFF)
if(IRONTUNE_THREAD_SAFETY)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "IRONTUNE_THREAD_SAFETY needs clang (cmake --preset fuzz)")
  endif()
  add_compile_options(-Wthread-safety -Werror=thread-safety)
endif()
