# Finetune stage: metrics, task table/specs/readers and encoding (torch-free), the trainer on
# synthetic id-level tasks, the study report/plot, and finetune/predict/study end to end on the
# shared data (skipped without it).
gmlp_add_test(NAME finetune_test
  SOURCES finetune_metrics_test.cc finetune_reader_test.cc finetune_study_report_test.cc
          finetune_trainer_test.cc finetune_e2e_test.cc
  LIBS gmlp::finetune
  TORCH)
