# `make install` (cmake --install): the tools, the runtime libraries and their
# headers, and the CMake package that lets an application compile a model in
# its own build (cmake/attncConfig.cmake.in).
#
#   PREFIX/bin/          attnc, attnc-opt, attn-ref
#   PREFIX/lib/          libattnrt.a, libattncli.a
#   PREFIX/include/attn/ abi.h, runtime.h (libattnrt), cli.h (libattncli)
#   PREFIX/lib/cmake/attnc/  attncConfig.cmake and its version file
#
# bin/ and lib/ are fixed rather than GNUInstallDirs' choices: attnc finds
# its runtime in ../lib from its own directory (tools/attnc/Linker.cpp).

include(CMakePackageConfigHelpers)

set(ATTN_INSTALL_CMAKEDIR lib/cmake/attnc)

# The tools keep linking the shared libMLIR and libLLVM where the build found
# them; libMLIR is not on the loader's default path, so the installed tools
# carry that directory as their run path (what the build tree's have too).
set_target_properties(attnc attnc-opt attn-ref PROPERTIES
  INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
install(TARGETS attnc attnc-opt attn-ref EXPORT attncTargets
  RUNTIME DESTINATION bin)

# Imported as attnc::runtime and attnc::cli; their users get include/ for
# <attn/...>, and the system libraries libattnrt needs come along.
set_target_properties(attnrt PROPERTIES EXPORT_NAME runtime)
set_target_properties(attncli PROPERTIES EXPORT_NAME cli)
install(TARGETS attnrt attncli EXPORT attncTargets
  ARCHIVE DESTINATION lib
  LIBRARY DESTINATION lib
  INCLUDES DESTINATION include)
install(DIRECTORY
    ${PROJECT_SOURCE_DIR}/runtime/include/attn
    ${PROJECT_SOURCE_DIR}/runtime/cli/include/attn
  DESTINATION include
  FILES_MATCHING PATTERN "*.h")

install(EXPORT attncTargets NAMESPACE attnc::
  DESTINATION ${ATTN_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/attncConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/attncConfig.cmake
  INSTALL_DESTINATION ${ATTN_INSTALL_CMAKEDIR})
# Before 1.0 a minor version may change abi.h's contract between compiled
# objects and libattnrt: find_package(attnc 0.1) accepts 0.1.x only.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/attncConfigVersion.cmake
  VERSION ${ATTN_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
    ${PROJECT_BINARY_DIR}/cmake/attncConfig.cmake
    ${PROJECT_BINARY_DIR}/cmake/attncConfigVersion.cmake
  DESTINATION ${ATTN_INSTALL_CMAKEDIR})
