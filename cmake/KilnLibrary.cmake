# kiln_library(<folder> DEPS <targets...>)
#
# Builds every .cc under <folder>/ (recursively) into the static library kiln_<folder>.
# Sources are globbed so that adding a file needs no CMake edit; CONFIGURE_DEPENDS makes
# the build notice new files. A folder with no sources yet becomes an INTERFACE library,
# so dependents can link it before it has code.
function(kiln_library folder)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/${folder}/*.cc")
  set(target kiln_${folder})
  if(sources)
    add_library(${target} STATIC ${sources})
    # Headers are included as "folder/file.h": from the source tree when building, from
    # <prefix>/include once installed (cmake/KilnInstall.cmake).
    target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                $<INSTALL_INTERFACE:include>)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
    # The headers use C++20 (std::span, ...): a program that includes them, in the tree or
    # against an installed Kiln, is compiled as C++20 without having to say so.
    target_compile_features(${target} PUBLIC cxx_std_20)
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                   $<INSTALL_INTERFACE:include>)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  # Kiln::<folder>, the name an installed Kiln exports (cmake/KilnInstall.cmake), works
  # inside the tree too, so examples link the same name either way.
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${folder})
  add_library(Kiln::${folder} ALIAS ${target})
endfunction()

# kiln_test_suite(<name> SOURCES <files...> DEPS <targets...> [SHARDS <n>])
#
# One GoogleTest executable registered with CTest under <name>, or, with SHARDS, as <n> CTest
# tests <name>_shard<i> that each run every n-th test case (GoogleTest's sharding), so that
# `ctest -j` spreads a long suite over the cores.
function(kiln_test_suite name)
  cmake_parse_arguments(ARG "" "SHARDS" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_SOURCES)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} kiln_test_source_dir GTest::gtest GTest::gmock
                        GTest::gtest_main)
  target_compile_options(${name} PRIVATE ${KILN_TEST_CODE_FLAGS})
  if(NOT ARG_SHARDS)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "KILN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
    return()
  endif()
  math(EXPR last "${ARG_SHARDS} - 1")
  foreach(shard RANGE ${last})
    add_test(NAME ${name}_shard${shard} COMMAND ${name})
    set_tests_properties(${name}_shard${shard} PROPERTIES ENVIRONMENT
      "KILN_SOURCE_DIR=${PROJECT_SOURCE_DIR};GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${shard}")
  endforeach()
endfunction()
