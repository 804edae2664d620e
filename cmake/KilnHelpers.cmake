# kiln_add_library(NAME SOURCES... [DEPS dep...] [PRIVATE_DEPS dep...])
# One library per folder: C++20, warnings, the folder's parent on the include
# path (so includes read "ir/expr.h"), and a kiln::NAME alias.
function(kiln_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(kiln_${name} STATIC ${ARG_SOURCES})
  add_library(kiln::${name} ALIAS kiln_${name})
  target_include_directories(kiln_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  target_link_libraries(kiln_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  kiln_set_warnings(kiln_${name})
endfunction()

function(kiln_set_warnings target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# Sanitizers (option KILN_SANITIZE, e.g. "address,undefined"; scripts/test.sh builds
# build-asan with it): every target of the project is compiled and linked with them, and a
# UBSan finding stops the program instead of printing and going on. GCC's
# -Wmaybe-uninitialized is wrong under the sanitizers (it flags std::regex inside Catch2).
function(kiln_enable_sanitizers sanitizers)
  add_compile_options(-fsanitize=${sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all -Wno-maybe-uninitialized)
  add_link_options(-fsanitize=${sanitizers})
endfunction()

# Under a sanitizer, binaries link the shared libstdc++ and libgcc and keep their symbols:
# the sanitizer runtimes load libstdc++.so (libubsan) and libgcc_s.so (libasan) anyway, so a
# static copy would put two C++ runtimes and two unwinders in one process (and the binary is
# no longer self-contained, the reason for static linking); stripping (-s) would leave
# reports without names. Removes those options from every target under `dir`, however its
# folder added them.
function(kiln_drop_static_runtime dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(options ${target} LINK_OPTIONS)
    if(options)
      list(REMOVE_ITEM options -static-libstdc++ -static-libgcc "$<$<CONFIG:Release>:-s>")
      set_property(TARGET ${target} PROPERTY LINK_OPTIONS ${options})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    kiln_drop_static_runtime(${subdir})
  endforeach()
endfunction()
