# Detects a usable XRT: one new enough to drive a Ryzen AI NPU (2.18 or
# later: hardware contexts, xrt::elf and xrt::ext). Looked for, in order,
# under -DIRONTUNE_XRT_PREFIX=..., $XILINX_XRT and /opt/xilinx/xrt.
# Debian 12's libxrt-dev (XRT 2.13, for Alveo cards) has no
# xrt/xrt_hw_context.h and is not used.
#
# Sets IRONTUNE_HAVE_XRT and, when ON, the imported target
# irontune_xrt_runtime (XRT's headers and libxrt_coreutil).
# docs/npu-box.md, "Building with XRT".

set(IRONTUNE_XRT_PREFIX "" CACHE PATH
    "Where XRT is installed (holding include/xrt/xrt_hw_context.h)")

set(IRONTUNE_HAVE_XRT OFF)
set(_irontune_xrt_candidates)
foreach(prefix IN ITEMS "${IRONTUNE_XRT_PREFIX}" "$ENV{XILINX_XRT}"
                        /opt/xilinx/xrt)
  if(prefix)
    list(APPEND _irontune_xrt_candidates "${prefix}")
  endif()
endforeach()

foreach(prefix IN LISTS _irontune_xrt_candidates)
  if(NOT EXISTS "${prefix}/include/xrt/xrt_hw_context.h")
    continue()
  endif()
  if(NOT EXISTS "${prefix}/include/xrt/experimental/xrt_ext.h" OR
     NOT EXISTS "${prefix}/include/xrt/experimental/xrt_elf.h")
    message(STATUS "XRT at ${prefix} lacks xrt/experimental/xrt_ext.h or "
                   "xrt_elf.h (older than 2.18?); not used")
    continue()
  endif()
  find_library(IRONTUNE_XRT_COREUTIL xrt_coreutil
    PATHS "${prefix}/lib" "${prefix}/lib64" NO_DEFAULT_PATH)
  if(NOT IRONTUNE_XRT_COREUTIL)
    message(STATUS "XRT at ${prefix} has headers but no libxrt_coreutil; "
                   "not used")
    unset(IRONTUNE_XRT_COREUTIL CACHE)
    continue()
  endif()
  add_library(irontune_xrt_runtime INTERFACE IMPORTED)
  target_include_directories(irontune_xrt_runtime SYSTEM INTERFACE
    "${prefix}/include")
  target_link_libraries(irontune_xrt_runtime INTERFACE
    "${IRONTUNE_XRT_COREUTIL}")
  set(IRONTUNE_HAVE_XRT ON)
  set(IRONTUNE_XRT_FOUND_AT "${prefix}")
  break()
endforeach()

if(IRONTUNE_HAVE_XRT)
  message(STATUS "XRT: ${IRONTUNE_XRT_FOUND_AT} (irontuned drives real NPUs: "
                 "--device xrt:N)")
else()
  message(STATUS "XRT: not found (looked in: ${_irontune_xrt_candidates}); "
                 "irontuned has the simulated NPU only. docs/npu-box.md")
endif()
