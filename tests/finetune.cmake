# Finetune stage: metrics, task table/specs/readers and encoding (torch-free) and the trainer
# on synthetic id-level tasks.
gmlp_add_test(NAME finetune_test
  SOURCES finetune_metrics_test.cc finetune_reader_test.cc finetune_trainer_test.cc
  LIBS gmlp::finetune
  TORCH)
