# Study: the report and plot from made-up results, and the study, finetune and predict end to
# end on the shared data (skipped without it).
gmlp_add_test(NAME study_test
  SOURCES study_report_test.cc study_e2e_test.cc
  LIBS gmlp::study gmlp::finetune
  TORCH)
