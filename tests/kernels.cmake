# Tests of gmlp::kernels: each CPU kernel against ATen or a float64 composition, and the ops'
# dispatch under both policies (one executable; see tests/kernels_*.cc).
gmlp_add_test(NAME kernels_test TORCH
  SOURCES kernels_attention_bf16_test.cc kernels_dropout_test.cc kernels_gelu_cpu_test.cc
          kernels_gemm_test.cc kernels_layer_norm_cpu_test.cc kernels_multi_tensor_test.cc kernels_ops_test.cc
          kernels_split_heads_test.cc kernels_xent_test.cc
  LIBS gmlp::kernels)
