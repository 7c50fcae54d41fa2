# Study: the report and plot from made-up results, and the study, finetune and predict end to
# end on the shared data (skipped without it).
gmlp_add_test(NAME study_test
  SOURCES study_config_test.cc study_report_test.cc study_e2e_test.cc study_budget_test.cc
  LIBS gmlp::study gmlp::finetune
  TORCH)
# The study's torch-free parts: the alignment probe, the results table, bootstrap intervals and
# verdicts. Its `gmlp probe` end-to-end test runs when build/gmlp exists and skips otherwise (no
# build dependency, so this suite builds without LibTorch).
gmlp_add_test(NAME study_core_test
  SOURCES study_core_test.cc
  LIBS gmlp::study_core gmlp::finetune_core)
