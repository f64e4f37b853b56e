# tessera_add_plugin(NAME SOURCES src... [LIBS lib...]): builds libNAME.so, a Tessera plugin
# (tessera/hal_plugin.h): a MODULE library that exports only tsr_plugin_entry (everything
# else hidden, static Tessera libraries included), linked with --no-undefined so a missing
# symbol fails the build instead of the load, against Tessera::target (the Target base
# class) and Tessera::hal_base (tsr_status_make). Built as C++20 like Tessera itself: a
# Target crosses the plugin boundary as a C++ object.
function(tessera_add_plugin name)
  cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "tessera_add_plugin(${name}): no SOURCES")
  endif()
  add_library(${name} MODULE ${P_SOURCES})
  set_target_properties(${name} PROPERTIES
    CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
    CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE Tessera::target Tessera::hal_base ${P_LIBS})
  target_link_options(${name} PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined)
endfunction()
