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
