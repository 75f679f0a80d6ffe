# Run by `cmake --install` and by CPack (install(SCRIPT) in CMakeLists.txt): installs the files
# whose place depends on the prefix given at install time, which may differ from the one the
# build was configured with (`cmake --install --prefix`, CPack's /usr). Set before it runs:
# UROCE_PACKAGING_DIR (this folder), UROCE_PACKAGING_BINARY_DIR (a scratch folder).
#   prefix /usr:        /etc/uroce/uroce.toml, /lib/systemd/system (Debian's unit folder)
#   prefix /usr/local:  /etc/uroce/uroce.toml, /usr/local/lib/systemd/system
#   other prefixes:     <prefix>/etc/uroce/uroce.toml, <prefix>/lib/systemd/system
# /etc/uroce/uroce.toml is the file lib/config reads; the unit's ExecStart names the installed
# `uroce`. DESTDIR applies to all of them (file(INSTALL) prepends it).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/usr/local")
  set(etc /etc/uroce)
else()
  set(etc ${CMAKE_INSTALL_PREFIX}/etc/uroce)
endif()
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(units /lib/systemd/system)
else()
  set(units ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()

# The sample configuration; one already there (edited, or written by `uroce link add`) stays.
if(EXISTS "$ENV{DESTDIR}${etc}/uroce.toml")
  message(STATUS "Keeping: $ENV{DESTDIR}${etc}/uroce.toml")
else()
  file(INSTALL DESTINATION ${etc} TYPE FILE FILES ${UROCE_PACKAGING_DIR}/uroce.toml)
endif()

# The units, made for this prefix in a scratch folder of its own (installs with another DESTDIR
# or prefix may run at the same time, e.g. the tests').
set(UROCE_BINDIR ${CMAKE_INSTALL_PREFIX}/bin)
string(MD5 key "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
foreach(name uroce-exporter.service uroce-hostd@.service)
  set(unit ${UROCE_PACKAGING_BINARY_DIR}/${key}/${name})
  configure_file(${UROCE_PACKAGING_DIR}/${name}.in ${unit} @ONLY)
  file(INSTALL DESTINATION ${units} TYPE FILE FILES ${unit})
endforeach()

# What lintian reports that does not apply (the file says why); only the package's prefix.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  file(INSTALL DESTINATION /usr/share/lintian/overrides TYPE FILE
       FILES ${UROCE_PACKAGING_DIR}/lintian-overrides RENAME uroce)
endif()
