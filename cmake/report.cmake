# The tuning report (src/report): `dietcode tune --report DIR` writes DIR/index.html with
# SVG plots drawn by gnuplot beside it (runtime dependency: gnuplot-nox).
add_library(dietcode_report STATIC
  src/report/tuning_report.cpp
  src/report/tuning_series.cpp
  src/report/held_out_model.cpp
  src/report/gnuplot.cpp
  src/report/html.cpp
)
target_link_libraries(dietcode_report PUBLIC dietcode_tune dietcode_bench)
target_link_libraries(dietcode_cli PRIVATE dietcode_report)

if(BUILD_TESTING)
  # tests/CMakeLists.txt finds GTest in its own directory scope; find it here too.
  find_package(GTest REQUIRED)
  include(GoogleTest)
  set(report_test_dir ${CMAKE_SOURCE_DIR}/tests/report)
  # Unit and page tests: the numbers behind the plots, the page, its plot files, escaping.
  add_executable(test_report ${report_test_dir}/tuning_report_test.cpp)
  target_include_directories(test_report PRIVATE ${CMAKE_SOURCE_DIR}/tests ${report_test_dir})
  target_compile_definitions(test_report PRIVATE DIETCODE_TEST_DATA="${CMAKE_SOURCE_DIR}/tests/data")
  target_link_libraries(test_report PRIVATE dietcode_report GTest::gtest_main)
  gtest_discover_tests(test_report DISCOVERY_TIMEOUT 60 PROPERTIES LABELS report TIMEOUT 300)

  # The sample report opened in headless Chromium: every image must load.
  add_executable(report_sample ${report_test_dir}/write_sample_report.cpp)
  target_include_directories(report_sample PRIVATE ${CMAKE_SOURCE_DIR}/tests ${report_test_dir})
  target_compile_definitions(report_sample PRIVATE DIETCODE_TEST_DATA="${CMAKE_SOURCE_DIR}/tests/data")
  target_link_libraries(report_sample PRIVATE dietcode_report)
  add_test(NAME report.sample_page_images_load_in_chromium
           COMMAND bash -c "rm -rf report-sample && $<TARGET_FILE:report_sample> report-sample && bash ${report_test_dir}/check_images_in_chromium.sh report-sample"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(report.sample_page_images_load_in_chromium PROPERTIES
                       LABELS report SKIP_RETURN_CODE 77 TIMEOUT 180)

  # `dietcode tune --report` end to end: tune, benchmark, report, open in Chromium.
  add_test(NAME cli.tune_report_images_load_in_chromium
           COMMAND bash ${report_test_dir}/tune_report_e2e.sh $<TARGET_FILE:dietcode_cli>)
  set_tests_properties(cli.tune_report_images_load_in_chromium PROPERTIES
                       LABELS report SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
