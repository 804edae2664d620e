# `cmake --install build --prefix P` lays out what applications need, and nothing of LLVM:
#   P/bin/kiln                                  the compiler (kiln_add_kernels runs it)
#   P/lib/libkiln_runtime.a, libkiln_runtime.so  the runtime (runtime/CMakeLists.txt)
#   P/include/kiln/...                          the runtime's headers, at their source paths
#                                               ("runtime/runtime.h", "bundle/manifest.h",
#                                               "ir/dtype.h"), plus the C API as
#                                               kiln_runtime.h
#   P/lib/cmake/Kiln/                           the package: Kiln::runtime (static),
#                                               Kiln::runtime_shared, Kiln::kiln, and
#                                               kiln_add_kernels (cmake/KilnKernels.cmake)
# An application does find_package(Kiln REQUIRED) and links Kiln::runtime;
# examples/app/CMakeLists.txt is the model and tests/install builds it against a fresh install.
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR lib/cmake/Kiln)

install(TARGETS kiln_runtime_static kiln_runtime_shared kiln EXPORT KilnTargets
  ARCHIVE DESTINATION lib
  LIBRARY DESTINATION lib
  RUNTIME DESTINATION bin)

# Every header the public runtime headers include, transitively (runtime.h, driver.h and
# cache.h are the entry points; tests/install compiles each one alone against the install).
set(KILN_PUBLIC_HEADERS
  runtime/runtime.h runtime/launch.h runtime/driver.h
  bundle/status.h bundle/manifest.h bundle/rule.h bundle/cache.h
  ir/dtype.h ir/shape.h)
foreach(header ${KILN_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION include/kiln/${dir})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/runtime/c_api.h DESTINATION include/kiln RENAME kiln_runtime.h)

install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/KilnConfig.cmake INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/KilnKernels.cmake
              ${PROJECT_SOURCE_DIR}/cmake/KilnCompileSpec.cmake
  DESTINATION ${KILN_INSTALL_CMAKEDIR})
