# The fake rocprofiler-sdk, built whether or not the CUDA headers are present:
# one source, two ABI families, each a real librocprofiler-sdk.so.<major> that
# tests dlopen by path (FAKE_ROCPROFILER_V0_PATH / _V1_PATH).
# The files are named as the real ones (librocprofiler-sdk.so.0 / .so.1), each
# in its own folder.
foreach(abi 0 1)
  set(t fake_rocprofiler_v${abi})
  if(abi EQUAL 0)
    set(minor 5)
  else()
    set(minor 1)
  endif()
  add_library(${t} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_rocprofiler.c)
  target_compile_definitions(${t} PRIVATE FAKE_ROCP_ABI=${abi})
  target_include_directories(${t} PUBLIC ${CMAKE_CURRENT_LIST_DIR}
    PRIVATE ${PROJECT_SOURCE_DIR}/src/backends/rocprof)
  target_link_libraries(${t} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(${t} PROPERTIES OUTPUT_NAME rocprofiler-sdk
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/rocprof-v${abi}
    VERSION ${abi}.${minor}.0 SOVERSION ${abi})
  # No undefined symbols; exports are marked one by one.
  target_link_options(${t} PRIVATE -Wl,--no-undefined)
endforeach()
