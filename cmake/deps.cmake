# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
find_package(Boost 1.74 REQUIRED)              # Boost.Lockfree is header-only
pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET tomlplusplus)
pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)       # uroce capture
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)  # the tools' --json output, uroce-hostd's status (header-only)
# drivers/netlink: the kernel's view of a netdev (host mode)
pkg_check_modules(LIBNL REQUIRED IMPORTED_TARGET libnl-3.0 libnl-route-3.0)
if(UROCE_WITH_DPDK)
  pkg_check_modules(DPDK REQUIRED IMPORTED_TARGET libdpdk)
endif()
if(UROCE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(UROCE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# uroce_test(name SOURCES... LIBS... LABELS...): one gtest binary registered with ctest.
function(uroce_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  uroce_warnings(${name})
  # Shared test helpers are included as "tests/support/<file>.h".
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  list(LENGTH T_LABELS nlabels)
  if(nlabels GREATER 1)
    # gtest_discover_tests (CMake 3.25) flattens list values in PROPERTIES, so a binary with
    # several labels is registered as one ctest test whose properties take the list as it is.
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
      PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()
