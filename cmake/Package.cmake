# CPack: `cpack --config build/CPackConfig.cmake` (or `cmake --build build
# --target package`) makes irontune_VERSION_ARCH.deb, installed under /usr
# (the config in /etc, a conffile). Its maintainer scripts
# (deploy/debian/) create the irontune user and directories and enable
# irontuned.service; library dependencies come from dpkg-shlibdeps.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "irontune")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "irontune: tuning daemon and client for AMD Ryzen AI NPUs")
set(CPACK_PACKAGE_CONTACT "irontune maintainers <irontune@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_INSTALL_PREFIX "/usr")
# The install script writes the unit and /etc config from the prefix:
# install with DESTDIR so the prefix seen is /usr.
set(CPACK_SET_DESTDIR ON)
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION "misc")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${PROJECT_SOURCE_DIR}/deploy/debian/postinst"
  "${PROJECT_SOURCE_DIR}/deploy/debian/prerm"
  "${PROJECT_SOURCE_DIR}/deploy/debian/postrm"
  "${PROJECT_SOURCE_DIR}/deploy/debian/conffiles")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
