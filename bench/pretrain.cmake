# Pretraining throughput (tokens/s, MFU) and weak scaling; bench/pretrain_bench.sh runs it beside
# the PyTorch eager reference bench/pretrain_reference.py.
add_executable(pretrain_bench pretrain_bench.cc)
target_link_libraries(pretrain_bench PRIVATE gmlp::pretrain gmlp::model gmlp_torch gmlp_bench_profile absl::flags
                      absl::flags_parse)
gmlp_use_torch_pch(pretrain_bench)
# optimizer_bench: clipping + AdamW as multi-tensor CPU kernels vs ATen's per-tensor ops.
add_executable(optimizer_bench optimizer_bench.cc)
target_link_libraries(optimizer_bench PRIVATE gmlp::pretrain gmlp::model gmlp_torch absl::strings)
gmlp_use_torch_pch(optimizer_bench)
