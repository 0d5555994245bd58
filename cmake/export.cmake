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

# --- tests: export modules, link them from C, check results and error paths ---------
if(BUILD_TESTING)
  add_executable(export_make_modules tests/export/make_modules.cpp)
  target_link_libraries(export_make_modules PRIVATE dietcode)
  target_include_directories(export_make_modules PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  set(export_work ${CMAKE_BINARY_DIR}/export-tests)
  set(export_script ${CMAKE_SOURCE_DIR}/tests/export/export_test.sh)
  set(export_src ${CMAKE_SOURCE_DIR}/tests/export)

  add_test(NAME export.make_modules
           COMMAND bash -c "mkdir -p ${export_work} && $<TARGET_FILE:export_make_modules> ${export_work}")
  set_tests_properties(export.make_modules PROPERTIES FIXTURES_SETUP export_modules)

  # name | module | C program | its extra flags | extra `dietcode export` options
  set(export_cases
    "dense_gelu|dense_gelu.json|dense_test.c|-DEPILOGUE=3|"
    "dense_gelu_avx2|dense_gelu_avx2.json|dense_test.c|-DEPILOGUE=3|"
    "dense_plain|dense_plain.json|dense_test.c|-DEPILOGUE=0|"
    "bmm_nt|bmm_nt.json|bmm_test.c|-DBATCH=3 -DLAYOUT_NT=1|--native")
  foreach(case ${export_cases})
    string(REPLACE "|" ";" fields "${case}")
    list(GET fields 0 name)
    list(GET fields 1 module)
    list(GET fields 2 program)
    list(GET fields 3 flags)
    list(LENGTH fields count)
    set(export_args "")
    if(count GREATER 4)
      list(GET fields 4 export_args)
    endif()
    separate_arguments(flags)
    add_test(NAME export.${name}
             COMMAND bash ${export_script} $<TARGET_FILE:dietcode_cli> ${export_work}/${module}
                     ${name} ${export_src}/${program} ${CMAKE_C_COMPILER} ${export_work} ${flags})
    set_tests_properties(export.${name} PROPERTIES FIXTURES_REQUIRED export_modules LABELS export
                         ENVIRONMENT "EXPORT_ARGS=${export_args}"
                         PASS_REGULAR_EXPRESSION "all checks passed")
  endforeach()

  # End to end: a module from `dietcode tune` (dense 80x48, bias + GELU, M = 1..32).
  add_test(NAME export.tuned_dense
           COMMAND bash -c "mkdir -p ${export_work} && rm -f ${export_work}/tuned.json ${export_work}/tuned.json.records.jsonl && $<TARGET_FILE:dietcode_cli> tune --op dense --N 80 --K 48 --M 1..32 --epilogue bias_gelu --trials 16 --measure-per-round 8 --population 64 --no-bench --quiet --out ${export_work}/tuned.json && bash ${export_script} $<TARGET_FILE:dietcode_cli> ${export_work}/tuned.json tuned_dense ${export_src}/dense_test.c ${CMAKE_C_COMPILER} ${export_work} -DEPILOGUE=3")
  set_tests_properties(export.tuned_dense PROPERTIES LABELS export TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "all checks passed")

  # The default name comes from the module file's name.
  add_test(NAME export.default_name
           COMMAND dietcode_cli export ${export_work}/dense_plain.json --out ${export_work}/default-name)
  set_tests_properties(export.default_name PROPERTIES FIXTURES_REQUIRED export_modules
                       PASS_REGULAR_EXPRESSION "default-name/libdense_plain.so")

  # Bad input is refused with a message naming it.
  add_test(NAME export.rejects_unknown_module
           COMMAND dietcode_cli export ${export_work}/no-such-module.json --out ${export_work}/x)
  set_tests_properties(export.rejects_unknown_module PROPERTIES
                       PASS_REGULAR_EXPRESSION "no-such-module.json: cannot open the module file")
  add_test(NAME export.rejects_bad_name
           COMMAND dietcode_cli export ${export_work}/dense_plain.json --out ${export_work}/x --name 9-lives)
  set_tests_properties(export.rejects_bad_name PROPERTIES FIXTURES_REQUIRED export_modules
                       PASS_REGULAR_EXPRESSION "name '9-lives': expected a C identifier")
  add_test(NAME export.rejects_reserved_name
           COMMAND dietcode_cli export ${export_work}/dense_plain.json --out ${export_work}/x --name dietcode_dense)
  set_tests_properties(export.rejects_reserved_name PROPERTIES FIXTURES_REQUIRED export_modules
                       PASS_REGULAR_EXPRESSION "not starting with 'dietcode'")
  # A directory below a regular file cannot be created.
  add_test(NAME export.rejects_unwritable_dir
           COMMAND dietcode_cli export ${export_work}/dense_plain.json --out ${export_work}/dense_plain.json/sub)
  set_tests_properties(export.rejects_unwritable_dir PROPERTIES FIXTURES_REQUIRED export_modules
                       PASS_REGULAR_EXPRESSION "dense_plain.json/sub: cannot create the directory")
endif()
