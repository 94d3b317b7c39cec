# irontune_library(NAME [DEPS dep...]): the static library irontune::NAME of
# the calling folder's .cc files (tests and main.cc left out). Every source
# includes by path from the repository's top ("daemon/npu/device.h"), and
# tests/layering_test.cmake checks that those includes keep to the layers
# docs/ARCHITECTURE.md lists.
function(irontune_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER sources EXCLUDE REGEX "(_test|/main)\\.cc$")
  add_library(irontune_${name} STATIC ${sources})
  add_library(irontune::${name} ALIAS irontune_${name})
  target_include_directories(irontune_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(irontune_${name} PUBLIC ${ARG_DEPS}
    PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()
