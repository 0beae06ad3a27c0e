# kiln's layers as library targets (the map: shared design, "Folders and what each owns").
#
# Each layer is a static library of its folders' sources, linking only the layers below it. A
# layer sees headers through an include view of its own: a folder under the build tree,
# include-views/<layer>/kiln/, holding links to that layer's folders and nothing else. A layer's
# view is public, so a layer sees its own folders and, through what it links, those of every
# layer below, but never those above: `#include "kiln/optim/optimizer.h"` in nn/ is "no such
# file", a wrong arrow that fails to build.
#
# Every source spells kiln's headers with the kiln/ prefix ("kiln/engine/tensor.h"), in this
# tree and installed, so that no name of kiln's collides with a folder of the user's.

set(KILN_VIEWS_DIR ${CMAKE_BINARY_DIR}/include-views)

# kiln_include_view(<dir> <folder>...): <dir>/<folder> -> the source folder, for each folder.
function(kiln_include_view dir)
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  foreach(folder IN LISTS ARGN)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${dir}/${folder} SYMBOLIC)
  endforeach()
endfunction()

# kiln_add_layer(<target> FOLDERS <folder>... [LINKS <layer>...] [SOURCES <file>...])
# FOLDERS' *.cpp (not their subfolders) plus SOURCES make the library.
function(kiln_add_layer target)
  cmake_parse_arguments(LAYER "" "" "FOLDERS;LINKS;SOURCES" ${ARGN})
  set(sources ${LAYER_SOURCES})
  foreach(folder IN LISTS LAYER_FOLDERS)
    file(GLOB folder_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
    list(APPEND sources ${folder_sources})
  endforeach()
  list(REMOVE_ITEM sources ${PROJECT_SOURCE_DIR}/devices/vulkan_off.cpp)

  # A subfolder (devices/cpu) comes with its folder's link.
  set(view_folders "")
  foreach(folder IN LISTS LAYER_FOLDERS)
    string(REGEX REPLACE "/.*" "" top "${folder}")
    list(APPEND view_folders ${top})
  endforeach()
  list(REMOVE_DUPLICATES view_folders)
  kiln_include_view(${KILN_VIEWS_DIR}/${target}/kiln ${view_folders})
  add_library(${target} STATIC ${sources})
  add_library(kiln::${target} ALIAS ${target})
  # Position-independent: the same archives make the shared library (CMakeLists.txt).
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${KILN_VIEWS_DIR}/${target}>
                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${LAYER_LINKS} $<BUILD_INTERFACE:kiln_options>)
  if(KILN_SANITIZE STREQUAL "address")
    # vptr is off: oneTBB's flow graph downcasts its tasks in a way UBSan's vptr check rejects.
    target_compile_options(${target} PRIVATE -fsanitize=undefined -fno-sanitize=vptr
                           -fno-sanitize-recover=undefined)
  endif()
  if(NOT target STREQUAL "kiln_base")
    if(target STREQUAL "kiln_core")
      target_precompile_headers(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/precompiled_library.h)
    else()
      target_precompile_headers(${target} REUSE_FROM kiln_core)
    endif()
  endif()
  set_property(GLOBAL APPEND PROPERTY KILN_LAYERS ${target})
  set_property(GLOBAL APPEND PROPERTY KILN_LAYER_SOURCES ${sources})
endfunction()
