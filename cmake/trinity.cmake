# Helpers: one library per layer, one test binary per test file group.

# trinity_library(<layer> SOURCES ... DEPS ... [PRIVATE_DEPS ...])
# Creates target trinity_<layer>, include root is src/ so code includes "core/error.h".
function(trinity_library layer)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(trinity_${layer} STATIC ${A_SOURCES})
  target_include_directories(trinity_${layer} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(trinity_${layer} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
endfunction()

# trinity_test(<name> SOURCES ... DEPS ... LABELS ... [TIMEOUT s])
# Builds a GoogleTest binary and registers it with CTest under the given labels.
function(trinity_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    TRINITY_SOURCE_DIR="${PROJECT_SOURCE_DIR}" TRINITY_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
endfunction()
