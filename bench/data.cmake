# Data stage: loader throughput (masked sequences/s vs the tiny model's training rate) and the
# prepare pipeline driven by bench/data_prepare_bench.sh (vs spm_encode, peak memory).
add_executable(data_loader_bench data_loader_bench.cc)
target_link_libraries(data_loader_bench PRIVATE gmlp::data)
add_executable(data_prepare_bench data_prepare_bench.cc)
target_link_libraries(data_prepare_bench PRIVATE gmlp::data)
# `gmlp prepare` on the same documents as plain text and as .jsonl.zst (MB/s ratio, same shards).
add_executable(data_corpus_format_bench data_corpus_format_bench.cc)
target_link_libraries(data_corpus_format_bench PRIVATE gmlp::data PkgConfig::ZSTD)
target_compile_definitions(data_corpus_format_bench PRIVATE GMLP_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
