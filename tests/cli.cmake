# The `gmlp` command line: the flag registry, and each subcommand's --help against the defaults
# its config structs give a run.
gmlp_add_test(NAME cli_test
  SOURCES cli_test.cc cli_full_disk_test.cc
  LIBS gmlp::cli gmlp::study gmlp::finetune gmlp::pretrain gmlp::data gmlp::tokenizer
  TORCH)
add_dependencies(cli_test gmlp)
