# Export stage: safetensors, `gmlp export` (gmlp and Hugging Face layouts) and --init, and the
# Hugging Face tokenizer files, each checked by the other side's reader in torch 2.11's venv
# (tests/python/: PyPI's safetensors, transformers 5.25; skipped, naming why, without it).
gmlp_add_test(NAME export_test
  SOURCES export_test.cc export_hf_tokenizer_test.cc pretrain_test_util.cc
  LIBS gmlp::export gmlp_export_core gmlp::finetune gmlp_finetune_core gmlp::pretrain gmlp::data
       gmlp::model gmlp::tokenizer
  TORCH)
# The PyTorch twin (python/, installed into the same venv by scripts/python_env.sh) against gmlp:
# every encoder's export through tests/python/twin_check.py, and an SST-2 classifier.
gmlp_add_test(NAME export_twin_test
  SOURCES export_twin_test.cc
  LIBS gmlp::export gmlp::finetune gmlp::model
  TORCH)
