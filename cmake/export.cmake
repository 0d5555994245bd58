# dietcode export (src/export): a tuned module as a self-contained shared library and C
# header. Kernels and dispatcher become object code through LLVM at export time; the
# system's C++ driver links them with the export runtime archive below.

# The runtime every exported library carries: the generic C API over the generated
# descriptor, the thread pool and the packing scratch. Position-independent (it goes
# into a shared library) and hidden (the library exports only its own C API). It must
# not link LLVM, XGBoost, fmt or the dietcode library.
add_library(dietcode_export_runtime STATIC
  src/export/runtime/export_runtime.cpp
  src/runtime/thread_pool.cpp
  src/runtime/scratch.cpp
)
target_include_directories(dietcode_export_runtime PRIVATE ${CMAKE_SOURCE_DIR}/src)
set_target_properties(dietcode_export_runtime PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# The exporter, linked into the command-line tool. It finds the runtime archive beside
# the dietcode executable, else at its build-tree path.
add_library(dietcode_export STATIC
  src/export/export_module.cpp
  src/export/export_llvm.cpp
  src/export/export_header.cpp
  src/export/export_link.cpp
)
target_include_directories(dietcode_export PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_include_directories(dietcode_export SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(dietcode_export PRIVATE ${LLVM_DEFINITIONS}
  DIETCODE_EXPORT_RUNTIME_ARCHIVE="$<TARGET_FILE:dietcode_export_runtime>"
  DIETCODE_EXPORT_CXX="${CMAKE_CXX_COMPILER}")
target_link_libraries(dietcode_export PUBLIC dietcode PRIVATE LLVM)
add_dependencies(dietcode_export dietcode_export_runtime)
target_link_libraries(dietcode_cli PRIVATE dietcode_export)

# Its tests: tests/export/CMakeLists.txt.
