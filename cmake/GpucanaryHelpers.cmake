# Helpers shared by every component: one warnings target for our code only,
# sanitizer flags, and one function each to add a library, a test, a benchmark.

add_library(gpucanary_warnings INTERFACE)
target_compile_options(gpucanary_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion
  -Wnull-dereference -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  $<$<CXX_COMPILER_ID:Clang>:-Wthread-safety>)

if(GPUCANARY_SANITIZE)
  string(REPLACE ";" "," _gc_san "${GPUCANARY_SANITIZE}")
  add_compile_options(-fsanitize=${_gc_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_gc_san})
endif()

# Extra compile options for code that only drives the code under test: the
# test executables and the CLI front end. CI's sanitizer build sets -O0 here
# (the libraries, where the work is, stay at -O1): instrumented -O1 code of
# header-heavy test and CLI11 files took most of CI's compile time.
set(GPUCANARY_GLUE_COMPILE_OPTIONS "" CACHE STRING
    "Compile options added to test executables and the CLI front end")

# Coverage instrumentation for everything libFuzzer runs (the fuzz targets add
# -fsanitize=fuzzer themselves, for the libFuzzer main).
if(GPUCANARY_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# gc_add_library(NAME SOURCES ... [DEPS ...])
# A static library gpucanary_<NAME> rooted at src/, so includes read "expfmt/parser.h".
function(gc_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(gpucanary_${name} STATIC ${ARG_SOURCES})
  target_include_directories(gpucanary_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(gpucanary_${name} PUBLIC ${ARG_DEPS} PRIVATE gpucanary_warnings)
endfunction()

# gc_add_test(NAME SOURCES ... [DEPS ...] [LABELS ...])
# A GoogleTest executable registered with CTest, label "unit" or the one given.
# Tests see GPUCANARY_SHARED_DIR
# and GPUCANARY_SOURCE_DIR as string macros.
function(gc_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT GPUCANARY_BUILD_TESTS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                        gpucanary_warnings)
  target_compile_options(${name} PRIVATE ${GPUCANARY_GLUE_COMPILE_OPTIONS})
  target_compile_definitions(${name} PRIVATE
    GPUCANARY_SHARED_DIR="${GPUCANARY_SHARED_DIR}"
    GPUCANARY_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GPUCANARY_BINARY_DIR="${PROJECT_BINARY_DIR}")
  include(GoogleTest)
  # One label per test: gtest_discover_tests cannot pass a list through
  # PROPERTIES (a second label would be read as a property name). Tests are
  # "unit" unless the call names another label ("integration").
  if(ARG_LABELS)
    list(GET ARG_LABELS 0 _gc_label)
  else()
    set(_gc_label unit)
  endif()
  # Integration tests run for seconds to minutes, mostly waiting on real
  # time (a live fleet, a canary): a high COST makes `ctest -j` start them
  # first, so the short unit tests fill the cores around them.
  if(_gc_label STREQUAL "integration")
    set(_gc_cost 100)
  else()
    set(_gc_cost 0)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS ${_gc_label} COST ${_gc_cost}
                       DISCOVERY_TIMEOUT 60)
endfunction()

# gc_add_benchmark(NAME SOURCES ... [DEPS ...] [ARGS ...])
# A Google Benchmark executable. CTest smoke-runs it (label "bench") with a tiny
# minimum time: CI checks that it runs, real figures come from running it by hand.
function(gc_add_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;ARGS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark gpucanary_warnings)
  target_compile_definitions(${name} PRIVATE GPUCANARY_SHARED_DIR="${GPUCANARY_SHARED_DIR}")
  if(GPUCANARY_BUILD_TESTS)
    add_test(NAME ${name}_smoke COMMAND ${name} --benchmark_min_time=0.001 ${ARG_ARGS})
    set_tests_properties(${name}_smoke PROPERTIES LABELS "bench")
  endif()
endfunction()
