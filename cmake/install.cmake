# `cmake --install`: the public headers, the libraries and the CMake package
# (cmake/kilnConfig.cmake.in).
#
# Public headers are the one-include headers (include/kiln/*.h) and every header they reach,
# installed under include/kiln/ as this tree spells them ("kiln/engine/tensor.h"); the rest
# (engine/submit.h, devices/, the scheduler's own) stay inside the library.
include(CMakePackageConfigHelpers)
set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

# kiln_public_headers(<out> <header>...): the headers reachable from the given ones through
# `#include "kiln/..."`, as paths below this tree's root (engine/tensor.h).
function(kiln_public_headers out)
  set(todo ${ARGN})
  set(found "")
  while(todo)
    list(POP_FRONT todo header)
    if(header IN_LIST found)
      continue()
    endif()
    list(APPEND found ${header})
    file(STRINGS ${PROJECT_SOURCE_DIR}/${header} includes REGEX "^#include \"kiln/[^\"]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"kiln/([^\"]+)\".*" "\\1" included "${line}")
      list(APPEND todo ${included})
    endforeach()
  endwhile()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

file(GLOB KILN_ONE_INCLUDE_HEADERS RELATIVE ${PROJECT_SOURCE_DIR}/include/kiln
     ${PROJECT_SOURCE_DIR}/include/kiln/*.h)
set(KILN_PUBLIC_ROOTS "")
foreach(header IN LISTS KILN_ONE_INCLUDE_HEADERS)
  file(STRINGS ${PROJECT_SOURCE_DIR}/include/kiln/${header} includes REGEX "^#include \"kiln/[a-z_]+/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"kiln/([^\"]+)\".*" "\\1" included "${line}")
    list(APPEND KILN_PUBLIC_ROOTS ${included})
  endforeach()
endforeach()
kiln_public_headers(KILN_PUBLIC_HEADERS ${KILN_PUBLIC_ROOTS})
install(DIRECTORY include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
foreach(header IN LISTS KILN_PUBLIC_HEADERS)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/${folder})
endforeach()

# Two export sets: a consumer of the shared library alone need not find what the static
# libraries name. kiln::kiln_static links every layer; each layer is there on its own too
# (kiln::kiln_core, kiln::kiln_nn, ...), for a program that needs less.
install(TARGETS ${KILN_LAYERS} kiln EXPORT kiln-static-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kiln_shared EXPORT kiln-shared-targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(variant static shared)
  install(EXPORT kiln-${variant}-targets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})
endforeach()

configure_package_config_file(cmake/kilnConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_CMAKE_DIR})
# 0.x: a minor release may break the API.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_DIR})
