# The layering test: run as `cmake -DROOT=<repo> -P layering_test.cmake`.
# Reads every include of the production sources and fails on one that runs
# against the layers (docs/ARCHITECTURE.md, "Layers"):
#
#   proto < common < daemon/base < daemon/ops < daemon/npu
#         < daemon/sim, daemon/xrt, daemon/store, daemon/builder < daemon/tune
#   daemon/store < daemon/fleet (PostgreSQL) < daemon/scheduler
#         < daemon/scheduler < daemon/edge < daemon/process
#   client: proto and common only; examples: proto and common only.
#
# A folder includes its own headers and those of the layers it lists below.
# gRPC's headers belong to the service edges: daemon/edge, daemon/process
# (which starts the server) and client; never daemon/scheduler, so that a
# source of jobs other than gRPC can feed the same worker.
# An include of a project path that does not exist fails too.

cmake_minimum_required(VERSION 3.25)

set(allowed_common       proto common)
set(allowed_client       proto common client)
set(allowed_examples     proto common examples)
set(allowed_daemon/base  proto common daemon/base)
set(allowed_daemon/ops   proto common daemon/base daemon/ops)
set(allowed_daemon/npu   proto common daemon/base daemon/npu)
set(allowed_daemon/sim   proto common daemon/base daemon/ops daemon/npu daemon/sim)
set(allowed_daemon/store proto common daemon/base daemon/npu daemon/store)
set(allowed_daemon/fleet proto common daemon/base daemon/npu daemon/store
                         daemon/fleet)
set(allowed_daemon/xrt   proto common daemon/base daemon/npu daemon/xrt)
set(allowed_daemon/builder proto common daemon/base daemon/npu
                           daemon/builder)
set(allowed_daemon/tune  proto common daemon/base daemon/ops daemon/npu
                         daemon/store daemon/tune)
set(allowed_daemon/scheduler proto common daemon/base daemon/ops daemon/npu
                             daemon/store daemon/fleet daemon/builder
                             daemon/tune daemon/scheduler)
set(allowed_daemon/edge  proto common daemon/base daemon/npu daemon/store
                         daemon/fleet daemon/tune daemon/scheduler daemon/edge)
set(allowed_daemon/process proto common daemon/base daemon/ops daemon/npu
                           daemon/sim daemon/store daemon/fleet daemon/tune
                           daemon/xrt
                           daemon/builder daemon/scheduler daemon/edge
                           daemon/process)
set(grpc_allowed daemon/edge daemon/process client)

# The layer of a repository path, or "" when it is not a project path.
function(layer_of path out)
  if(path MATCHES "^irontune/v1/")
    set(${out} proto PARENT_SCOPE)
  elseif(path MATCHES "^(daemon/[a-z_]+)/")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  elseif(path MATCHES "^(common|client|examples|tests|bench)/")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

file(GLOB_RECURSE sources RELATIVE ${ROOT}
  ${ROOT}/common/*.h ${ROOT}/common/*.cc
  ${ROOT}/client/*.h ${ROOT}/client/*.cc
  ${ROOT}/daemon/*.h ${ROOT}/daemon/*.cc
  ${ROOT}/examples/*.h ${ROOT}/examples/*.cc
  ${ROOT}/tests/*.h ${ROOT}/tests/*.cc
  ${ROOT}/bench/*.h ${ROOT}/bench/*.cc)

set(failures 0)
set(checked 0)
foreach(src IN LISTS sources)
  layer_of(${src} from)
  file(STRINGS ${ROOT}/${src} lines REGEX "^#include [\"<]")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^#include [\"<]([^\">]+)[\">].*" "\\1" inc "${line}")
    math(EXPR checked "${checked} + 1")
    if(inc MATCHES "^grpcpp/|\\.grpc\\.pb\\.h$")
      if(NOT from IN_LIST grpc_allowed AND NOT from MATCHES "^(tests|bench)$")
        message(SEND_ERROR "${src}: includes ${inc}; gRPC belongs to "
                           "daemon/edge, daemon/process and client")
        math(EXPR failures "${failures} + 1")
      endif()
    endif()
    layer_of(${inc} to)
    if(to STREQUAL "")
      continue()
    endif()
    if(NOT to STREQUAL "proto" AND NOT EXISTS ${ROOT}/${inc})
      message(SEND_ERROR "${src}: includes ${inc}, which does not exist")
      math(EXPR failures "${failures} + 1")
      continue()
    endif()
    if(from MATCHES "^(tests|bench)$")
      continue()  # tests and benchmarks may use every layer
    endif()
    if(NOT DEFINED allowed_${from})
      message(SEND_ERROR "${src}: folder ${from} has no layer; add it to "
                         "tests/layering_test.cmake and docs/ARCHITECTURE.md")
      math(EXPR failures "${failures} + 1")
      continue()
    endif()
    if(NOT to IN_LIST allowed_${from})
      message(SEND_ERROR "${src}: includes ${inc}: ${from} may not depend "
                         "on ${to}")
      math(EXPR failures "${failures} + 1")
    endif()
  endforeach()
endforeach()

list(LENGTH sources files)
if(failures GREATER 0)
  message(FATAL_ERROR "layering: ${failures} includes run against the layers")
endif()
message(STATUS "layering: ${checked} includes in ${files} files keep to the layers")
