# Fuzz targets (fuzz/): libFuzzer with clang-19, built when DIETCODE_FUZZ=ON.
#
#   CXX=clang++-19 CC=clang-19 cmake -S . -B build-fuzz -G Ninja -DDIETCODE_FUZZ=ON
#   cmake --build build-fuzz --target fuzz        # or: scripts/fuzz.sh [SECONDS]
#
# Each target feeds arbitrary bytes to one loader of a file a user may hand us (module,
# workload spec, decision tree, tuning records, safetensors weights) under AddressSanitizer and
# UndefinedBehaviorSanitizer. The loaders do no code generation, so the targets compile
# only the sources they need (no LLVM, no XGBoost): the fuzz build takes a minute, not
# the whole project's time. Off by default; the normal build never sees these lines.
option(DIETCODE_FUZZ "Build the libFuzzer targets in fuzz/ (needs clang with libFuzzer)" OFF)
if(NOT DIETCODE_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
          "DIETCODE_FUZZ=ON needs clang (libFuzzer): configure with CXX=clang++-19 "
          "(apt-get install clang-19 libclang-rt-19-dev); found ${CMAKE_CXX_COMPILER_ID}")
endif()

# Sanitizers abort on the first report (no recovery), so libFuzzer saves the input.
# -UNDEBUG keeps assertions (nlohmann's among them) whatever the build type; -O1 -g is
# the usual fuzzing trade of speed for readable stack traces.
set(DIETCODE_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all
                             -fno-omit-frame-pointer -g -O1 -UNDEBUG)

# The loaders and what they reach: IR and tensor expressions (operators are rebuilt to
# validate schedules), schedules, the decision tree, module files, workload specs (with
# the bert-base preset's operators, model/bert.cpp and the graph it builds on) and
# tuning records. machine.cpp comes with records.cpp; fuzz/host_target_stub.cpp stands
# in for the LLVM host query it references but the loaders never call.
add_library(dietcode_fuzz_loaders STATIC
  ${DIETCODE_FRONTEND_SOURCES}
  src/dispatch/decision_tree.cpp
  src/runtime/module_file.cpp
  src/tune/workload.cpp
  src/tune/records.cpp
  src/tune/machine.cpp
  src/model/safetensors.cpp
  src/model/graph.cpp
  src/model/bert.cpp
  fuzz/host_target_stub.cpp
)
target_include_directories(dietcode_fuzz_loaders PUBLIC include src)
target_compile_options(dietcode_fuzz_loaders PUBLIC ${DIETCODE_FUZZ_SANITIZERS}
                       PRIVATE -fsanitize=fuzzer-no-link)
target_link_options(dietcode_fuzz_loaders PUBLIC -fsanitize=address,undefined)
target_link_libraries(dietcode_fuzz_loaders PUBLIC fmt::fmt nlohmann_json::nlohmann_json)

# `fuzz` builds every target; scripts/fuzz.sh runs them.
add_custom_target(fuzz)
foreach(name module_file workload_spec decision_tree records safetensors)
  add_executable(fuzz_${name} fuzz/${name}_fuzzer.cpp)
  target_include_directories(fuzz_${name} PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_${name} PRIVATE dietcode_fuzz_loaders)
  set_target_properties(fuzz_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  add_dependencies(fuzz fuzz_${name})
endforeach()
