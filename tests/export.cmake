# Export stage: safetensors, `gmlp export` (gmlp and Hugging Face layouts) and --init, with the
# Python side's readers (tests/python/).
gmlp_add_test(NAME export_test
  SOURCES export_test.cc pretrain_test_util.cc
  LIBS gmlp::export gmlp::finetune gmlp::pretrain gmlp::data gmlp::model
  TORCH)
