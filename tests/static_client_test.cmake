# The static client test: run as `cmake -DCLIENT=<irontune-client> -P
# static_client_test.cmake`. With IRONTUNE_STATIC_CLIENT the client needs
# no shared library but the C and C++ runtime (cmake/StaticLink.cmake);
# fails naming any other, as where cmake/link-static-deps fell back to
# shared libraries for want of an archive.

cmake_minimum_required(VERSION 3.25)

execute_process(COMMAND readelf -d "${CLIENT}"
  OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${CLIENT} failed (${rc})")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]+\\]" needed "${dynamic}")
if(NOT needed)
  message(FATAL_ERROR "${CLIENT}: readelf shows no NEEDED entries")
endif()
set(shared "")
foreach(entry IN LISTS needed)
  string(REGEX REPLACE ".*\\[([^]]+)\\]" "\\1" lib "${entry}")
  if(NOT lib MATCHES "^(libc|libm|libstdc\\+\\+|libgcc_s|libatomic|ld-linux-[^.]*)\\.so")
    list(APPEND shared "${lib}")
  endif()
endforeach()
if(shared)
  message(FATAL_ERROR "${CLIENT} needs shared libraries beyond the C and "
    "C++ runtime: ${shared}")
endif()
message(STATUS "${CLIENT}: only the C and C++ runtime is shared")
