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

# fused_ops_bench: the fused bf16 kernels (LayerNorm, bias + GELU, bias + GELU + gate) vs the
# ATen ops they replace, forward and backward, interleaved in one process (was layer_norm_bench).
add_executable(fused_ops_bench fused_ops_bench.cc)
target_link_libraries(fused_ops_bench PRIVATE gmlp::model gmlp::common gmlp_torch)
gmlp_use_torch_pch(fused_ops_bench)
