# IRONTUNE_STATIC_CLIENT: irontune-client links static archives of gRPC,
# protobuf, Abseil and what they need (Debian's -dev packages ship them),
# with the C and C++ runtime shared. A short-lived client spends most of its
# start resolving symbols across some fifty shared libraries otherwise
# (bench/README.md, `service_bench cached`). Where an archive is missing the
# link falls back to shared libraries (cmake/link-static-deps).
option(IRONTUNE_STATIC_CLIENT
  "Link irontune-client against static archives of its dependencies" ON)

# irontune_link_deps_statically(TARGET): link TARGET as described above.
function(irontune_link_deps_statically target)
  if(NOT IRONTUNE_STATIC_CLIENT OR IRONTUNE_FUZZ)
    return()
  endif()
  get_filename_component(libdir "${Protobuf_LIBRARY_RELEASE}" DIRECTORY)
  if(NOT IS_DIRECTORY "${libdir}")
    message(STATUS "irontune-client: no library dir found; linked shared")
    return()
  endif()
  set_property(TARGET ${target} PROPERTY RULE_LAUNCH_LINK
    "\"${PROJECT_SOURCE_DIR}/cmake/link-static-deps\" \"${libdir}\"")
  set_property(GLOBAL PROPERTY IRONTUNE_CLIENT_LINKED_STATIC ON)
endfunction()
