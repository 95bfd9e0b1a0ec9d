# xinfer_module(NAME DEPS dep...): one static library per layer folder.
# Sources are the folder's *.cc files (recursively) except *_test.cc; every *_test.cc becomes a
# GoogleTest binary registered with CTest. Keeping this in one function means a folder's
# CMakeLists.txt only states its dependencies.
function(xinfer_module name)
  cmake_parse_arguments(M "" "" "DEPS;TEST_DEPS" ${ARGN})
  file(GLOB_RECURSE _all CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  set(_srcs)
  set(_tests)
  foreach(f ${_all})
    if(f MATCHES "_test\\.cc$")
      list(APPEND _tests ${f})
    else()
      list(APPEND _srcs ${f})
    endif()
  endforeach()
  if(NOT _srcs)
    message(STATUS "xinfer: module ${name} has no sources yet; skipped")
    return()
  endif()
  add_library(xinfer_${name} STATIC ${_srcs})
  target_include_directories(xinfer_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(xinfer_${name} PRIVATE ${XINFER_WARNINGS})
  target_link_libraries(xinfer_${name} PUBLIC ${M_DEPS})
  if(XINFER_BUILD_TESTS AND _tests)
    add_executable(${name}_tests ${_tests})
    target_compile_options(${name}_tests PRIVATE ${XINFER_WARNINGS})
    target_compile_definitions(${name}_tests PRIVATE
      XINFER_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
    target_link_libraries(${name}_tests PRIVATE xinfer_${name} ${M_TEST_DEPS} GTest::gtest_main
                          GTest::gmock)
    gtest_discover_tests(${name}_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
  endif()
endfunction()
