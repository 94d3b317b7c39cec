# Fails when a Catch2 test name holds a character that CMake's test
# discovery splits on (';') or that Catch2 reads as a tag ('['), or begins
# with '-', which Catch2 reads as an option when ctest passes the name: such
# a name turns into ctest entries that run no test at all, or fail.
# Usage: cmake -DROOT=<tests dir> -P test_names.cmake
file(GLOB_RECURSE sources "${ROOT}/*.cc")
set(bad "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  if(text MATCHES "TEST_CASE\\(\"[^\"]*;" OR
     text MATCHES "TEST_CASE\\(\"[^\"]*\\[" OR
     text MATCHES "TEST_CASE\\([ \t\r\n]*\"-")
    string(APPEND bad "\n  ${source}")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test names with ';' or '[' (use ',' or '('), or "
                      "beginning with '-':${bad}")
endif()
list(LENGTH sources count)
message(STATUS "${count} test sources: every test name is safe for ctest")
