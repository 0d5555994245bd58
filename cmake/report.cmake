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

# Its tests: tests/report/CMakeLists.txt.
