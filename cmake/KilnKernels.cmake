# kiln_add_kernels(TARGET SPEC... [ARCH sm_80 sm_90])
#
# Compiles each spec at build time, when the spec or the compiler changes:
#   <build>/kiln_kernels/<name>.bundle/  the bundle (`kiln compile SPEC -o ...`), every variant
#   <build>/kiln_kernels/<name>.h        typed launchers (`kiln compile SPEC --emit=header`):
#                                        kiln_kernels::<kernel>(kernel, stream, ptrs..., symbols...)
#                                        and kiln_kernels::Kernels::find(bundle)
# where <name> is the spec's file name without extension. TARGET gets the header directory on
# its include path (#include "<name>.h") and, per spec, the compile definition
#   KILN_BUNDLE_<NAME>="<absolute bundle path>"  (NAME upper-cased, non-identifier chars -> _)
# ARCH defaults to the compiler's own list (sm_80 and sm_90). The compiler is Kiln::kiln unless
# KILN_EXECUTABLE names another one (e.g. a host build when cross-compiling).
set(_KILN_KERNELS_DIR ${CMAKE_CURRENT_LIST_DIR})

function(kiln_add_kernels target)
  cmake_parse_arguments(ARG "" "" "ARCH" ${ARGN})
  if(NOT ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kiln_add_kernels(${target}): no spec given")
  endif()
  if(KILN_EXECUTABLE)
    set(kiln ${KILN_EXECUTABLE})
  else()
    set(kiln $<TARGET_FILE:Kiln::kiln>)
  endif()
  list(JOIN ARG_ARCH "," archs)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/kiln_kernels)
  foreach(spec ${ARG_UNPARSED_ARGUMENTS})
    get_filename_component(spec ${spec} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    get_filename_component(name ${spec} NAME_WE)
    string(MAKE_C_IDENTIFIER ${name} macro)
    string(TOUPPER ${macro} macro)
    set(bundle ${out_dir}/${name}.bundle)
    set(header ${out_dir}/${name}.h)
    add_custom_command(
      OUTPUT ${bundle}/manifest.json ${header}
      COMMAND ${CMAKE_COMMAND} -DKILN=${kiln} -DSPEC=${spec} -DBUNDLE=${bundle}
              -DHEADER=${header} -DARCH=${archs} -P ${_KILN_KERNELS_DIR}/KilnCompileSpec.cmake
      DEPENDS ${spec} ${kiln} ${_KILN_KERNELS_DIR}/KilnCompileSpec.cmake
      COMMENT "kiln compile ${name}"
      VERBATIM)
    target_sources(${target} PRIVATE ${header})
    target_compile_definitions(${target} PRIVATE KILN_BUNDLE_${macro}="${bundle}")
  endforeach()
  target_include_directories(${target} PRIVATE ${out_dir})
endfunction()
