# Tokenizer stage: corpus reader, SentencePiece shim, training, the `gmlp tokenizer` command.

# `gmlp` with only the tokenizer subcommand (tokenizer_cli_test runs it), so the command is
# tested even while other stages' parts of `gmlp` are being built.
add_executable(tokenizer_cli
  tokenizer_cli_main.cc
  ${PROJECT_SOURCE_DIR}/cli/flags.cc
  ${PROJECT_SOURCE_DIR}/tokenizer/tokenizer_main.cc)
target_link_libraries(tokenizer_cli PRIVATE gmlp::cli gmlp::tokenizer gmlp::common gmlp_torch)
gmlp_use_torch_pch(tokenizer_cli)

gmlp_add_test(NAME tokenizer_test
  SOURCES tokenizer_corpus_reader_test.cc tokenizer_test.cc tokenizer_cli_test.cc
  LIBS gmlp::tokenizer ZLIB::ZLIB LibLZMA::LibLZMA PkgConfig::ZSTD)
add_dependencies(tokenizer_test tokenizer_cli)

# The same tokenizer inside a LibTorch process: the reason the shim exists.
gmlp_add_test(NAME tokenizer_torch_test SOURCES tokenizer_torch_test.cc LIBS gmlp::tokenizer TORCH)
