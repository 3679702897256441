# `cmake --install`: the runtime side of Kiln — the libraries a program that loads and
# serves compiled models links (support, formats, vm, builtins, serving; never the compiler
# or LLVM) — their headers, and a CMake package, so that such a program builds out of tree:
#
#   find_package(Kiln CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE Kiln::serving)   # or Kiln::vm + Kiln::builtins
#
# The libraries are static; KilnConfig.cmake finds their third-party dependencies again
# (find_dependency), since static libraries carry them to the final link.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_RUNTIME_FOLDERS support formats vm builtins serving)
set(KILN_RUNTIME_TARGETS)
foreach(folder IN LISTS KILN_RUNTIME_FOLDERS)
  list(APPEND KILN_RUNTIME_TARGETS kiln_${folder})
  # Every header of the folder: public headers include their neighbours freely, so
  # installing a subset would leave dangling includes.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${folder}
          FILES_MATCHING PATTERN "*.h")
endforeach()

# A sanitized build's libraries call into the sanitizer runtimes: a program linking them
# must link those runtimes too.
if(KILN_SANITIZE)
  foreach(target IN LISTS KILN_RUNTIME_TARGETS)
    target_link_options(${target} INTERFACE -fsanitize=${KILN_SANITIZE})
  endforeach()
endif()

install(TARGETS ${KILN_RUNTIME_TARGETS} EXPORT KilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/KilnConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
