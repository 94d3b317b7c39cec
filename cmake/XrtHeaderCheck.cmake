# The header check: daemon/xrt/xrt_device.cc compiled against XRT's own
# headers (IRONTUNE_XRT_INCLUDE_DIR, from cmake/Xrt.cmake), once per C++
# standard in IRONTUNE_XRT_HEADER_CHECK_STANDARDS, with the project's
# warnings as errors. Compile only: XRT's headers need no library, so an
# include tree taken from XRT's sources will do (docs/npu-box.md, "Building
# with XRT"). Its targets, xrt_header_check_cxxNN under xrt_header_check,
# are in the default build when the check is on.
#
# IRONTUNE_XRT_HEADER_CHECK: AUTO (the default) is on when -DXRT_ROOT
# names an XRT, off otherwise; so the default build and CI, which have no
# XRT, never compile it.

set(IRONTUNE_XRT_HEADER_CHECK AUTO CACHE STRING
    "Compile the XRT backend against XRT's headers: AUTO, ON or OFF")
set_property(CACHE IRONTUNE_XRT_HEADER_CHECK PROPERTY STRINGS AUTO ON OFF)
set(IRONTUNE_XRT_HEADER_CHECK_STANDARDS 17 20 CACHE STRING
    "The C++ standards the XRT header check compiles at")

set(_irontune_xrt_check OFF)
if(IRONTUNE_XRT_HEADER_CHECK STREQUAL "AUTO")
  if(XRT_ROOT)
    set(_irontune_xrt_check ON)
  endif()
elseif(IRONTUNE_XRT_HEADER_CHECK)
  set(_irontune_xrt_check ON)
endif()
if(_irontune_xrt_check AND NOT IRONTUNE_XRT_INCLUDE_DIR)
  message(FATAL_ERROR "IRONTUNE_XRT_HEADER_CHECK is on but no XRT 2.19 or "
    "later was found: give -DXRT_ROOT=<an XRT install or include tree>")
endif()
if(_irontune_xrt_check)
  message(STATUS "XRT header check: daemon/xrt/xrt_device.cc against "
    "${IRONTUNE_XRT_INCLUDE_DIR}, C++ ${IRONTUNE_XRT_HEADER_CHECK_STANDARDS}")
endif()

# Called by daemon/xrt/CMakeLists.txt with the backend's source, once the
# host library it includes (irontune::xrt_host) exists.
function(irontune_xrt_header_check source)
  if(NOT _irontune_xrt_check)
    return()
  endif()
  add_custom_target(xrt_header_check ALL)
  foreach(std IN LISTS IRONTUNE_XRT_HEADER_CHECK_STANDARDS)
    set(t xrt_header_check_cxx${std})
    add_library(${t} OBJECT ${source})
    set_target_properties(${t} PROPERTIES CXX_STANDARD ${std}
                                          CXX_STANDARD_REQUIRED ON
                                          CXX_EXTENSIONS OFF)
    target_include_directories(${t} SYSTEM PRIVATE
      "${IRONTUNE_XRT_INCLUDE_DIR}")
    target_link_libraries(${t} PRIVATE irontune::xrt_host)
    target_compile_options(${t} PRIVATE -Werror)
    add_dependencies(xrt_header_check ${t})
  endforeach()
endfunction()
