# Helpers shared by every component: one warnings target for our code only,
# sanitizer flags, and one function each to add a library, a test, a benchmark.

# Warnings that are errors in every build, for every compiler; tests/compile_checks
# compiles with the same list, so its checks test the build's own rule.
set(GPUCANARY_ERROR_FLAGS -Werror=unused-result)
add_library(gpucanary_warnings INTERFACE)
target_compile_options(gpucanary_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion
  -Wnull-dereference -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  ${GPUCANARY_ERROR_FLAGS}
  $<$<CXX_COMPILER_ID:Clang>:-Wthread-safety -Werror=thread-safety>)
# -Werror=thread-safety: a GUARDED_BY member touched without its lock (core/thread_annotations.h)
# fails the clang build instead of scrolling past as a warning. -Werror=unused-result: a
# dropped Status or Result<T> (both [[nodiscard]], core/status.h) fails every build.

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
  # A test may link the simulator (gc_check_layering).
  set_property(TARGET ${name} PROPERTY GPUCANARY_TEST TRUE)
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
# A filter in ARGS that matches no benchmark fails the smoke test (Google
# Benchmark itself exits 0 then, having run nothing).
function(gc_add_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;ARGS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark gpucanary_warnings)
  target_compile_definitions(${name} PRIVATE GPUCANARY_SHARED_DIR="${GPUCANARY_SHARED_DIR}")
  if(GPUCANARY_BUILD_TESTS)
    add_test(NAME ${name}_smoke COMMAND ${name} --benchmark_min_time=0.001 ${ARG_ARGS})
    set_tests_properties(${name}_smoke PROPERTIES LABELS "bench" FAIL_REGULAR_EXPRESSION
                                                  "Failed to match any benchmarks")
  endif()
endfunction()

# gc_check_layering()
# Keeps two dependency rules of docs/architecture.md true, at configure time:
#  - the simulator (gpucanary_sim, gpucanary_sim_live) is a fixture, not part
#    of the product: no target under src/ reaches it through its link
#    libraries, directly or transitively, except the simulator's own users,
#    the CLI (src/cli), the demo (src/demo) and tests (gc_add_test);
#  - the evaluation harness (eval/) links the product, never the other way
#    round: no target under src/, tests included, reaches a target of eval/.
# Fails configuring with every offending chain. Call once, after every target
# is defined.
function(gc_check_layering)
  set(_simulator gpucanary_sim gpucanary_sim_live)
  set(_sim_users ${PROJECT_SOURCE_DIR}/src/sim ${PROJECT_SOURCE_DIR}/src/cli
                 ${PROJECT_SOURCE_DIR}/src/demo)
  _gc_targets_under(${PROJECT_SOURCE_DIR}/src _targets)
  set(_errors "")
  foreach(_target IN LISTS _targets)
    get_target_property(_dir ${_target} SOURCE_DIR)
    get_target_property(_is_test ${_target} GPUCANARY_TEST)
    set(_may_link_sim FALSE)
    if(_is_test OR _dir IN_LIST _sim_users)
      set(_may_link_sim TRUE)
    endif()
    _gc_link_closure(${_target} _reached)
    # The shortest chain to each rule's first offender (breadth-first order).
    set(_reported "")
    foreach(_dep IN LISTS _reached)
      get_target_property(_dep_dir ${_dep} SOURCE_DIR)
      string(FIND "${_dep_dir}/" "${PROJECT_SOURCE_DIR}/eval/" _in_eval)
      if(_dep IN_LIST _simulator AND NOT _may_link_sim AND NOT "sim" IN_LIST _reported)
        list(APPEND _reported sim)
        set(_why "links the simulator, which only src/sim, src/cli, src/demo and tests may")
      elseif(_in_eval EQUAL 0 AND NOT "eval" IN_LIST _reported)
        list(APPEND _reported eval)
        set(_why "links the evaluation harness eval/, which links the product, not the reverse")
      else()
        continue()
      endif()
      _gc_link_chain(${_target} ${_dep} _chain)
      string(APPEND _errors "\n  ${_target} (${_dir}) ${_why}:\n    ${_chain}")
    endforeach()
  endforeach()
  if(_errors)
    message(FATAL_ERROR "Dependency rule broken (cmake/GpucanaryHelpers.cmake, gc_check_layering):"
                        "${_errors}\nMove the code that needs it out of src/ (into eval/, a test "
                        "or the CLI), or link a library that does not pull it in.")
  endif()
endfunction()

# Every library and executable defined in `dir` and its subdirectories.
function(_gc_targets_under dir out)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(_kept "")
  foreach(_target IN LISTS _targets)
    get_target_property(_type ${_target} TYPE)
    if(_type MATCHES "_LIBRARY$|^EXECUTABLE$")
      list(APPEND _kept ${_target})
    endif()
  endforeach()
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _gc_targets_under(${_sub} _sub_targets)
    list(APPEND _kept ${_sub_targets})
  endforeach()
  set(${out} ${_kept} PARENT_SCOPE)
endfunction()

# The project's own targets that `target` links, directly or transitively
# (breadth first, through LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES;
# imported targets such as GTest::gtest are not followed). For each reached
# target T, _gc_via_T in the caller's scope names the target that linked it.
function(_gc_link_closure target out)
  set(_queue ${target})
  set(_seen ${target})
  set(_reached "")
  while(_queue)
    list(POP_FRONT _queue _current)
    get_target_property(_libs ${_current} LINK_LIBRARIES)
    get_target_property(_interface ${_current} INTERFACE_LINK_LIBRARIES)
    foreach(_item IN LISTS _libs _interface)
      # $<LINK_ONLY:x> is a private dependency of a static library; "::@(...)"
      # marks a call from another directory; other expressions are compiler
      # flags and the like, never our targets.
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _item "${_item}")
      if(NOT _item OR _item MATCHES "^::@" OR NOT TARGET "${_item}")
        continue()
      endif()
      get_target_property(_aliased ${_item} ALIASED_TARGET)
      if(_aliased)
        set(_item ${_aliased})
      endif()
      get_target_property(_imported ${_item} IMPORTED)
      if(_imported OR _item IN_LIST _seen)
        continue()
      endif()
      list(APPEND _seen ${_item})
      list(APPEND _queue ${_item})
      list(APPEND _reached ${_item})
      set(_gc_via_${_item} ${_current} PARENT_SCOPE)
      set(_gc_via_${_item} ${_current})
    endforeach()
  endwhile()
  set(${out} ${_reached} PARENT_SCOPE)
endfunction()

# "from -> ... -> to" along the _gc_via_* links _gc_link_closure(from) left.
function(_gc_link_chain from to out)
  set(_chain ${to})
  set(_at ${to})
  while(NOT _at STREQUAL from)
    set(_at ${_gc_via_${_at}})
    string(PREPEND _chain "${_at} -> ")
  endwhile()
  set(${out} "${_chain}" PARENT_SCOPE)
endfunction()
