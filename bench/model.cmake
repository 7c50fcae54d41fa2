# model_bench: forward+backward MLM-step throughput of every encoder (fp32 and bf16 autocast),
# MFU against a GEMM peak measured in the same run, and a gMLP profile (see bench/RESULTS.md).
add_executable(model_bench model_bench.cc)
target_link_libraries(model_bench PRIVATE gmlp::model gmlp_torch gmlp_bench_profile absl::strings absl::str_format)
gmlp_use_torch_pch(model_bench)

# context_bench: steps each encoder needs to learn a local rule from context, by sequence length
# (not a speed benchmark; see its header).
add_executable(context_bench context_bench.cc)
target_link_libraries(context_bench PRIVATE gmlp::model gmlp_torch absl::strings)
gmlp_use_torch_pch(context_bench)

# layer_norm_bench: the bf16 LayerNorm kernel vs cast + ATen fp32 layer_norm + cast, forward and
# backward, interleaved in one process.
add_executable(layer_norm_bench layer_norm_bench.cc)
target_link_libraries(layer_norm_bench PRIVATE gmlp::model gmlp::common gmlp_torch)
gmlp_use_torch_pch(layer_norm_bench)
