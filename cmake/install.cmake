# `cmake --install`: the headers, both libraries and the CMake package (cmake/kilnConfig.cmake.in).
# The headers go under include/kiln/ with include/kiln/ on the interface include path, so that
# their own spelling ("engine/tensor.h", as in this tree) resolves for consumers too.
include(CMakePackageConfigHelpers)
set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

install(DIRECTORY engine ops streams scheduler memory devices autograd nn optim io data train serve
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln
        FILES_MATCHING PATTERN "*.h" PATTERN "*.def")

# Two export sets: a consumer of the shared library alone need not find what the static one names.
install(TARGETS kiln EXPORT kiln-static-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
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
