# The `gmlp` command line: the flag registry, and each subcommand's --help against the defaults
# its config structs give a run.
gmlp_add_test(NAME cli_test
  SOURCES cli_test.cc cli_full_disk_test.cc
  LIBS gmlp::cli gmlp::study gmlp::finetune gmlp::pretrain gmlp::data gmlp::tokenizer
  TORCH)
add_dependencies(cli_test gmlp)
# TensorBoard event files: the framing (torch-free), files read back by TensorBoard's own reader,
# and those of real `gmlp pretrain` (resumed) and `gmlp finetune` runs against metrics.jsonl and
# results.json (tests/python/tensorboard_scalars.py in the torch 2.11 venv).
gmlp_add_test(NAME tensorboard_test SOURCES tensorboard_test.cc)
add_dependencies(tensorboard_test gmlp)
# Every `gmlp ...` command line in the tree's Markdown uses flags its subcommand lists (torch-free).
gmlp_add_test(NAME readme_commands_test SOURCES readme_commands_test.cc)
add_dependencies(readme_commands_test gmlp)
