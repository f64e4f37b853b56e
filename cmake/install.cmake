# The installable package (cmake --install build/default --prefix P), for vendors who build a
# backend out of tree (docs/porting.md, examples/plugin):
#   bin/                     tessera, tessera-cts
#   include/tessera/         the C ABI (hal.h, hal_driver.h, hal_plugin.h, ...) and runtime
#   include/tessera/sdk/     the C++ headers, rooted as in the tree (backends/target.h, ir/...)
#   lib/                     the static libraries, lib/tessera/libtessera_null_driver.so
#   lib/cmake/Tessera/       find_package(Tessera CONFIG): Tessera::hal, Tessera::ir,
#                            Tessera::runtime, ... and tessera_add_plugin()
#   lib/pkgconfig/tessera.pc the C ABI for non-CMake builds
#   share/tessera/           what the tools read: conformance xfail and CTS skip lists, kernels
# Installs every library in the closure of the public ones, so the exported link interfaces
# are complete. Never installs test code.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The libraries a consumer links, and everything they link (found by walking LINK_LIBRARIES).
set(TESSERA_PUBLIC_LIBS tessera_hal_base tessera_hal tessera_ir tessera_graph tessera_target
    tessera_plugin_targets tessera_runtime tessera_graph_exec tessera_builtin_drivers
    tessera_builtin_targets tessera_conformance tessera_null)
function(tessera_link_closure out)
  set(todo ${ARGN})
  set(seen)
  while(todo)
    list(POP_FRONT todo t)
    if(NOT t MATCHES "^tessera_" OR NOT TARGET ${t} OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(deps ${t} LINK_LIBRARIES)
    if(deps)
      list(APPEND todo ${deps})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()
tessera_link_closure(TESSERA_INSTALL_LIBS ${TESSERA_PUBLIC_LIBS})
foreach(lib ${TESSERA_INSTALL_LIBS})
  string(REGEX REPLACE "^tessera_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
endforeach()

install(TARGETS ${TESSERA_INSTALL_LIBS} EXPORT TesseraTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${CMAKE_INSTALL_INCLUDEDIR}/tessera/sdk)
install(TARGETS tessera tessera-cts RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tessera_null_driver_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tessera)

install(DIRECTORY hal/include/ runtime/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir ir backends conformance)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera/sdk
          FILES_MATCHING PATTERN "*.h" PATTERN "*.def"
          PATTERN "tests" EXCLUDE PATTERN "cts" EXCLUDE PATTERN "fuzz" EXCLUDE)
endforeach()
install(DIRECTORY conformance/xfail DESTINATION ${CMAKE_INSTALL_DATADIR}/tessera)
install(DIRECTORY conformance/cts/skips DESTINATION ${CMAKE_INSTALL_DATADIR}/tessera/cts)
install(DIRECTORY ir/examples conformance/kernels DESTINATION ${CMAKE_INSTALL_DATADIR}/tessera
        FILES_MATCHING PATTERN "*.tir")

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${TESSERA_CMAKE_DIR})
configure_package_config_file(cmake/TesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TesseraConfig.cmake INSTALL_DESTINATION ${TESSERA_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR)
# Same major and minor: the Target interface is C++ (hal_plugin.h, TSR_TARGET_INTERFACE_VERSION).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
        ${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake cmake/TesseraPlugin.cmake
        DESTINATION ${TESSERA_CMAKE_DIR})
configure_file(cmake/tessera.pc.in ${PROJECT_BINARY_DIR}/tessera.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tessera.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
