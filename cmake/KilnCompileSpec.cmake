# Build-time step of kiln_add_kernels (KilnKernels.cmake):
#   cmake -DKILN=kiln -DSPEC=s.kiln -DBUNDLE=dir -DHEADER=s.h [-DARCH=sm_80,sm_90] -P this
# writes the bundle and the typed-launcher header. The header is written only when its text
# changes, so a recompiled spec with the same signatures rebuilds nothing that includes it.
set(arch_args)
if(ARCH)
  set(arch_args --arch ${ARCH})
endif()
execute_process(COMMAND ${KILN} compile ${SPEC} -o ${BUNDLE} ${arch_args}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln compile ${SPEC} -o ${BUNDLE} failed (${rc})")
endif()
execute_process(COMMAND ${KILN} compile ${SPEC} --emit=header
                OUTPUT_VARIABLE text RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln compile ${SPEC} --emit=header failed (${rc})")
endif()
set(old "")
if(EXISTS ${HEADER})
  file(READ ${HEADER} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${HEADER} "${text}")
endif()
# The bundle's manifest is the build's record that this step ran.
file(TOUCH ${BUNDLE}/manifest.json)
