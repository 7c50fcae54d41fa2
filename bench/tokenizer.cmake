# Tokenizer stage: corpus reader and encode throughput against same-run references.
add_executable(tokenizer_bench tokenizer_bench.cc)
target_link_libraries(tokenizer_bench PRIVATE gmlp::tokenizer)
target_compile_definitions(tokenizer_bench PRIVATE GMLP_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
