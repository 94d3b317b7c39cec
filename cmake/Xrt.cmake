# Detects a usable XRT: 2.19 or later, the first XRT the backend compiles
# against (docs/npu-box.md, "Building with XRT"). XRT 2.18 (202420.2.18.179)
# installs its experimental/ headers beside xrt/ instead of inside it, and
# has no hw_context(device, elf), no ext::kernel(ctx, name) without a module
# and no run::get_ctrl_scratchpad_bo, all of which the full-ELF path uses.
#
# Looked for, in order, under -DXRT_ROOT=..., -DIRONTUNE_XRT_PREFIX=...,
# $XILINX_XRT, /opt/xilinx/xrt and /usr. A root holds the headers as XRT
# installs them: ROOT/include/xrt/... (an /opt/xilinx/xrt install, or a
# /usr one with GNUInstallDirs), ROOT/include/xrt/xrt/... (a /usr install
# of XRT's older "system" layout, include dir /usr/include/xrt), or
# ROOT/xrt/... (ROOT an include tree itself); and libxrt_coreutil in
# ROOT/lib, ROOT/lib64 or ROOT/lib/<multiarch> (lib/x86_64-linux-gnu).
# Debian 12's libxrt-dev (XRT 2.13, for Alveo cards) has no
# xrt/xrt_hw_context.h and is not used.
#
# Sets IRONTUNE_HAVE_XRT and, when ON, the imported target
# irontune_xrt_runtime (XRT's headers and libxrt_coreutil). Sets
# IRONTUNE_XRT_INCLUDE_DIR where headers of 2.19 or later were found, with
# or without the library, and defines irontune_xrt_header_check(), which
# daemon/xrt/ calls to compile the backend against those headers when an
# XRT was asked for by XRT_ROOT (cmake/XrtHeaderCheck.cmake).

set(XRT_ROOT "" CACHE PATH
    "An XRT install or include tree to build against (docs/npu-box.md)")
set(IRONTUNE_XRT_PREFIX "" CACHE PATH
    "Where XRT is installed (holding include/xrt/xrt_hw_context.h)")

# The include dir under `root` holding xrt/xrt_hw_context.h, or "".
function(_irontune_xrt_include_dir root out)
  set(${out} "" PARENT_SCOPE)
  foreach(dir IN ITEMS "${root}/include" "${root}/include/xrt" "${root}")
    if(EXISTS "${dir}/xrt/xrt_hw_context.h")
      set(${out} "${dir}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# "2.19" from an installed xrt/detail/version(-slim).h or 2.18's
# version.h, or "" for a tree without one (headers taken from XRT's
# sources: the build generates it).
function(_irontune_xrt_version inc out)
  set(${out} "" PARENT_SCOPE)
  foreach(f IN ITEMS xrt/detail/version-slim.h xrt/detail/version.h
                     version.h)
    if(EXISTS "${inc}/${f}")
      file(STRINGS "${inc}/${f}" code REGEX
           "define XRT_VERSION_CODE XRT_VERSION\\([0-9]+, *[0-9]+\\)")
      if(code MATCHES "XRT_VERSION\\(([0-9]+), *([0-9]+)\\)")
        set(${out} "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
endfunction()

# Why the headers in `inc` are older than 2.19, or "" when they are not.
function(_irontune_xrt_too_old inc out)
  _irontune_xrt_version("${inc}" version)
  if(version AND version VERSION_LESS 2.19)
    set(${out} "it is XRT ${version}" PARENT_SCOPE)
  elseif(NOT EXISTS "${inc}/xrt/experimental/xrt_elf.h" OR
         NOT EXISTS "${inc}/xrt/experimental/xrt_ext.h")
    set(${out} "it has no xrt/experimental/xrt_elf.h and xrt_ext.h (2.18 "
               "installs experimental/ outside xrt/)" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# The version header xrt/detail/abi.h includes, when `inc` lacks it (an
# include tree taken from XRT's sources: XRT's build generates it from
# src/CMake/config/), or "".
function(_irontune_xrt_missing_version inc out)
  set(${out} "" PARENT_SCOPE)
  if(EXISTS "${inc}/xrt/detail/abi.h")
    file(STRINGS "${inc}/xrt/detail/abi.h" lines REGEX
         "^# *include \"[^\"]*version[^\"]*\"")
    set(missing "")
    foreach(line IN LISTS lines)
      if(line MATCHES "\"([^\"]+)\"")
        set(h "${CMAKE_MATCH_1}")
        if(EXISTS "${inc}/${h}" OR EXISTS "${inc}/xrt/detail/${h}")
          return()  # found as the compiler would, from either directory
        endif()
        set(missing "${h}")
      endif()
    endforeach()
    set(${out} "${missing}" PARENT_SCOPE)
  endif()
endfunction()

set(IRONTUNE_HAVE_XRT OFF)
set(IRONTUNE_XRT_INCLUDE_DIR "")
set(_irontune_xrt_candidates)
foreach(root IN ITEMS "${XRT_ROOT}" "${IRONTUNE_XRT_PREFIX}"
                      "$ENV{XILINX_XRT}" /opt/xilinx/xrt /usr)
  if(root)
    list(APPEND _irontune_xrt_candidates "${root}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _irontune_xrt_candidates)

foreach(root IN LISTS _irontune_xrt_candidates)
  _irontune_xrt_include_dir("${root}" inc)
  set(asked OFF)
  if(XRT_ROOT AND root STREQUAL XRT_ROOT)
    set(asked ON)
  endif()
  if(NOT inc)
    if(asked)
      message(FATAL_ERROR "XRT_ROOT=${XRT_ROOT}: no xrt/xrt_hw_context.h "
        "under it (in include/, include/xrt/ or itself): not an XRT 2.19 or "
        "later (docs/npu-box.md, \"Building with XRT\")")
    elseif(EXISTS "${root}/include/xrt/xrt_device.h" OR
           EXISTS "${root}/include/xrt/xrt/xrt_device.h")
      message(STATUS "XRT at ${root} has no xrt/xrt_hw_context.h (older "
                     "than 2.19, e.g. Debian's libxrt-dev 2.13); not used")
    endif()
    continue()
  endif()
  _irontune_xrt_too_old("${inc}" why)
  if(why)
    if(asked)
      message(FATAL_ERROR "XRT_ROOT=${XRT_ROOT}: ${why}; irontune needs XRT "
        "2.19 or later (docs/npu-box.md, \"Building with XRT\")")
    endif()
    message(STATUS "XRT at ${root}: ${why}; irontune needs 2.19 or later, "
                   "not used")
    continue()
  endif()
  _irontune_xrt_missing_version("${inc}" missing)
  if(missing)
    if(asked)
      message(FATAL_ERROR "XRT_ROOT=${XRT_ROOT}: ${inc} has no ${missing}, "
        "which XRT's build generates (from src/CMake/config/ in XRT's "
        "sources); use an installed XRT or add it (docs/npu-box.md, "
        "\"Building with XRT\")")
    endif()
    message(STATUS "XRT at ${root}: no ${missing}; not used")
    continue()
  endif()
  set(libdirs "${root}/lib" "${root}/lib64")
  if(CMAKE_LIBRARY_ARCHITECTURE)
    list(APPEND libdirs "${root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
  endif()
  file(GLOB multiarch LIST_DIRECTORIES true "${root}/lib/*-linux-gnu*")
  list(APPEND libdirs ${multiarch})
  unset(IRONTUNE_XRT_COREUTIL CACHE)
  find_library(IRONTUNE_XRT_COREUTIL xrt_coreutil PATHS ${libdirs}
               NO_DEFAULT_PATH)
  if(NOT IRONTUNE_XRT_COREUTIL)
    unset(IRONTUNE_XRT_COREUTIL CACHE)
    if(asked)
      # Headers alone: the header check compiles against them.
      set(IRONTUNE_XRT_INCLUDE_DIR "${inc}")
      message(STATUS "XRT headers at ${inc} (no libxrt_coreutil under "
                     "${root}): compiled against by xrt_header_check only")
      break()
    endif()
    message(STATUS "XRT at ${root} has headers but no libxrt_coreutil in "
                   "${libdirs}; not used")
    continue()
  endif()
  set(IRONTUNE_XRT_INCLUDE_DIR "${inc}")
  add_library(irontune_xrt_runtime INTERFACE IMPORTED)
  target_include_directories(irontune_xrt_runtime SYSTEM INTERFACE "${inc}")
  target_link_libraries(irontune_xrt_runtime INTERFACE
    "${IRONTUNE_XRT_COREUTIL}")
  set(IRONTUNE_HAVE_XRT ON)
  set(IRONTUNE_XRT_FOUND_AT "${root}")
  break()
endforeach()

if(NOT IRONTUNE_HAVE_XRT)
  unset(IRONTUNE_XRT_COREUTIL CACHE)
endif()
if(IRONTUNE_HAVE_XRT)
  _irontune_xrt_version("${IRONTUNE_XRT_INCLUDE_DIR}" _irontune_xrt_ver)
  message(STATUS "XRT ${_irontune_xrt_ver}: ${IRONTUNE_XRT_FOUND_AT} "
                 "(irontuned drives real NPUs: --device xrt:N)")
elseif(IRONTUNE_XRT_INCLUDE_DIR)
  message(STATUS "XRT: headers only; irontuned has the simulated NPU only")
else()
  message(STATUS "XRT: not found (looked in: ${_irontune_xrt_candidates}); "
                 "irontuned has the simulated NPU only. docs/npu-box.md")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/XrtHeaderCheck.cmake)
