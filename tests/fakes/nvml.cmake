# The fake NVML (libnvidia-ml.so.1), built from strobe's own NVML
# declarations (src/backends/counters/nvml_abi.h): tests dlopen it by path
# (FAKE_NVML_PATH, through STROBE_NVML_PATH) and drive it (fake_nvml.h).
add_library(fake_nvml SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.c)
target_include_directories(fake_nvml PUBLIC ${CMAKE_CURRENT_LIST_DIR}
  PRIVATE ${PROJECT_SOURCE_DIR}/src/backends/counters)
target_link_libraries(fake_nvml PRIVATE Threads::Threads)
set_target_properties(fake_nvml PROPERTIES OUTPUT_NAME nvidia-ml
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/nvml SOVERSION 1)
target_link_options(fake_nvml PRIVATE -Wl,--no-undefined)
