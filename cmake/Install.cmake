# `cmake --install`: where an operator expects irontune's files (GNU
# install dirs under the prefix; /etc for the config when the prefix is
# /usr, as for the .deb):
#   bin/irontuned, bin/irontune-client
#   lib/systemd/system/irontuned.service  (ExecStart and --config rewritten
#                                          to the installed paths)
#   lib/sysusers.d/irontune.conf, lib/tmpfiles.d/irontune.conf
#   etc/irontune/irontuned.conf           (the commented example; an
#                                          existing one is kept)
#   share/doc/irontune/                   (README, docs/*.md, deploy notes,
#                                          examples/irontuned.conf)
include(GNUInstallDirs)

install(TARGETS irontuned irontune-client
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES deploy/irontune.sysusers.conf
  DESTINATION lib/sysusers.d RENAME irontune.conf)
install(FILES deploy/irontune.tmpfiles.conf
  DESTINATION lib/tmpfiles.d RENAME irontune.conf)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES deploy/README.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME deploy.md)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
  FILES_MATCHING PATTERN "*.md")
install(FILES deploy/irontuned.conf
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# The unit and the config depend on the prefix given at install time
# (`cmake --install --prefix`, or /usr for the .deb), so they are written
# then.
install(CODE "
  set(irontune_prefix \"\${CMAKE_INSTALL_PREFIX}\")
  if(irontune_prefix STREQUAL \"/usr\")
    set(irontune_etc \"/etc\")
  else()
    set(irontune_etc \"\${irontune_prefix}/etc\")
  endif()
  file(READ \"${PROJECT_SOURCE_DIR}/deploy/irontuned.service\" irontune_unit)
  string(REPLACE \"/usr/bin/irontuned\"
    \"\${irontune_prefix}/${CMAKE_INSTALL_BINDIR}/irontuned\"
    irontune_unit \"\${irontune_unit}\")
  string(REPLACE \"/etc/irontune/irontuned.conf\"
    \"\${irontune_etc}/irontune/irontuned.conf\"
    irontune_unit \"\${irontune_unit}\")
  string(REPLACE \"/usr/share/doc/irontune/\"
    \"\${irontune_prefix}/${CMAKE_INSTALL_DOCDIR}/\"
    irontune_unit \"\${irontune_unit}\")
  set(irontune_staged \"${PROJECT_BINARY_DIR}/install/irontuned.service\")
  file(WRITE \"\${irontune_staged}\" \"\${irontune_unit}\")
  file(INSTALL \"\${irontune_staged}\"
    DESTINATION \"\${irontune_prefix}/lib/systemd/system\")
  if(EXISTS \"\$ENV{DESTDIR}\${irontune_etc}/irontune/irontuned.conf\")
    message(STATUS \"Kept: \$ENV{DESTDIR}\${irontune_etc}/irontune/irontuned.conf\")
  else()
    file(INSTALL \"${PROJECT_SOURCE_DIR}/deploy/irontuned.conf\"
      DESTINATION \"\${irontune_etc}/irontune\")
  endif()
")
