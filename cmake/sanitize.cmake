# The whole project under AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer
# (part of ASan on Linux), built when DIETCODE_SANITIZE=ON; scripts/sanitize.sh configures
# build-sanitize/ with it and runs every test there.
#
#   cmake -S . -B build-sanitize -G Ninja -DDIETCODE_SANITIZE=ON \
#         -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19
#
# Every target is instrumented (libraries, the CLI, the measurement worker, the peer
# plugins, tests, examples), with two narrow exceptions applied at the end of this file
# (and no -fsanitize=function anywhere; see below):
# - the sources that include LLVM headers are built without -fsanitize=vptr: libLLVM is
#   built without RTTI, so its vtables carry no type_info and the vptr check would report
#   every virtual call on an LLJIT, TargetMachine or raw_ostream as a type mismatch;
# - dietcode_export_runtime (cmake/export.cmake) is not instrumented: `dietcode export`
#   links it into a user's shared library with -Wl,-z,defs and no sanitizer runtime.
#
# clang-19, not g++: the same toolchain as the fuzz build, and twice as fast to compile
# here with the sanitizers (jit.cpp 33 s vs 59 s). The runtime is the shared one
# (-shared-libsan) so the peer plugins, linked with --no-undefined, resolve its symbols;
# every executable gets an rpath to it.
option(DIETCODE_SANITIZE
       "Build every target with ASan + UBSan + LSan (scripts/sanitize.sh; needs clang)" OFF)
if(NOT DIETCODE_SANITIZE)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
          "DIETCODE_SANITIZE=ON needs clang for C and C++: configure with "
          "-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "
          "(apt-get install clang-19 libclang-rt-19-dev); found ${CMAKE_CXX_COMPILER_ID}")
endif()

execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                OUTPUT_VARIABLE DIETCODE_ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT EXISTS "${DIETCODE_ASAN_RUNTIME}")
  message(FATAL_ERROR "DIETCODE_SANITIZE=ON: ${CMAKE_CXX_COMPILER} has no shared ASan runtime "
                      "(apt-get install libclang-rt-19-dev)")
endif()
get_filename_component(DIETCODE_ASAN_RUNTIME_DIR "${DIETCODE_ASAN_RUNTIME}" DIRECTORY)

# No recovery: the first report fails the test. -O1 keeps the tests fast and stack traces
# readable (it comes after the build type's -O); -UNDEBUG keeps assertions whatever the
# build type, as the fuzz build does.
# -fno-sanitize=function: clang's function check reads a type hash from the 8 bytes before
# every function called through a pointer; the JIT's kernels and dispatchers carry none and
# start on a fresh page, so every call into generated code would fault (SEGV reading
# <page>-8 in Kernel::run and CompiledDispatcher::select).
add_compile_options(-fsanitize=address,undefined -fno-sanitize=function
                    -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1 -UNDEBUG)
add_link_options(-fsanitize=address,undefined -shared-libsan
                 -Wl,-rpath,${DIETCODE_ASAN_RUNTIME_DIR})

# The two exceptions, applied once every target exists (the targets are defined after
# this file is included).
function(dietcode_sanitize_exceptions)
  # Every project source that includes an LLVM header, found by reading the sources, so a
  # new one (a test that drives the JIT, say) needs no entry here.
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.cpp
       ${CMAKE_SOURCE_DIR}/tests/*.cpp ${CMAKE_SOURCE_DIR}/tools/*.cpp)
  set(llvm_sources)
  foreach(source IN LISTS sources)
    file(STRINGS ${source} llvm_includes REGEX "^#include [<\"]llvm/" LIMIT_COUNT 1)
    if(llvm_includes)
      list(APPEND llvm_sources ${source})
    endif()
  endforeach()
  # Source properties are per directory: set them in every directory that defines targets
  # (the top level and the test folders).
  set(directories ${CMAKE_SOURCE_DIR})
  set(pending ${CMAKE_SOURCE_DIR})
  while(pending)
    list(POP_FRONT pending dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND directories ${subdirs})
    list(APPEND pending ${subdirs})
  endwhile()
  set_source_files_properties(${llvm_sources} DIRECTORY ${directories}
                              PROPERTIES COMPILE_OPTIONS -fno-sanitize=vptr)
  target_compile_options(dietcode_export_runtime PRIVATE -fno-sanitize=all)
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL dietcode_sanitize_exceptions)
