# The fake Intel PTI (libpti_view.so.1), built whether or not any vendor
# headers are present: one source, two record families, each a real
# libpti_view.so.1 in its own folder that tests dlopen by path
# (FAKE_PTI_V1_PATH / FAKE_PTI_V2_PATH):
#   fake_pti_v1: ptiVersion 0.16.0, v1 strides (kernel 168, copy/fill 136, P2P 168);
#   fake_pti_v2: ptiVersion 1.2.0, the *_v2 records of src/backends/pti/pti_abi.h.
foreach(family 1 2)
  set(t fake_pti_v${family})
  add_library(${t} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_pti.c)
  target_compile_definitions(${t} PRIVATE FAKE_PTI_FAMILY=${family})
  target_include_directories(${t} PUBLIC ${CMAKE_CURRENT_LIST_DIR}
    PRIVATE ${PROJECT_SOURCE_DIR}/src/backends/pti)
  target_link_libraries(${t} PRIVATE Threads::Threads)
  set_target_properties(${t} PROPERTIES OUTPUT_NAME pti_view
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/pti-v${family}
    SOVERSION 1)
  # No undefined symbols; exports are marked one by one.
  target_link_options(${t} PRIVATE -Wl,--no-undefined)
endforeach()
