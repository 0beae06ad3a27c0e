# KILN_HWCAPS_V4: a second shared library, compiled for x86-64-v4 (AVX-512), installed where
# glibc's dynamic loader (2.33 and later) looks first on CPUs that have it:
# lib/glibc-hwcaps/x86-64-v4/. Same soname, same API: a program linked to kiln::kiln_shared gets
# the wider vectors at run time and the x86-64-v3 library elsewhere. The CPU kernels choose their
# vector width at compile time (devices/cpu/simd.h), so this is the one run-time choice that
# needs no kernel change; the price is compiling the library a second time, hence OFF.
if(KILN_NATIVE)
  message(FATAL_ERROR "KILN_HWCAPS_V4 builds on the x86-64-v3 baseline: set KILN_NATIVE=OFF")
endif()

get_property(KILN_V4_SOURCES GLOBAL PROPERTY KILN_LAYER_SOURCES)
add_library(kiln_objects_v4 OBJECT ${KILN_V4_SOURCES})
set_target_properties(kiln_objects_v4 PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_precompile_headers(kiln_objects_v4 PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cmake/precompiled_library.h)
# Not kiln_options: its -march=x86-64-v3 would come after this target's own -march.
target_compile_options(kiln_objects_v4 PRIVATE -march=x86-64-v4)
foreach(layer IN LISTS KILN_LAYERS)
  target_include_directories(kiln_objects_v4 PRIVATE ${KILN_VIEWS_DIR}/${layer})
endforeach()
target_link_libraries(kiln_objects_v4 PRIVATE spdlog::spdlog TBB::tbb nlohmann_json::nlohmann_json
                      ${KILN_PRIVATE_DEPS})

add_library(kiln_shared_v4 SHARED $<TARGET_OBJECTS:kiln_objects_v4>)
set_target_properties(kiln_shared_v4 PROPERTIES OUTPUT_NAME kiln VERSION ${PROJECT_VERSION}
                      SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/glibc-hwcaps/x86-64-v4)
target_link_libraries(kiln_shared_v4 PRIVATE spdlog::spdlog TBB::tbb ${KILN_PRIVATE_DEPS})
install(TARGETS kiln_shared_v4 LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/glibc-hwcaps/x86-64-v4 NAMELINK_SKIP)
