# IRONTUNE_FUZZ: a libFuzzer build (CMake preset `fuzz`, clang). Every
# library is compiled with libFuzzer's coverage hooks and AddressSanitizer +
# UBSan (any UB aborts, so libFuzzer reports it as a crash); the fuzz
# targets in tests/fuzz/ link libFuzzer's driver. Without it those targets
# are plain replay programs run by ctest (tests/fuzz/CMakeLists.txt).
option(IRONTUNE_FUZZ "Build the libFuzzer targets in tests/fuzz (clang)" OFF)
if(IRONTUNE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "IRONTUNE_FUZZ needs clang (cmake --preset fuzz)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
