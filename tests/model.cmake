# Tests of gmlp::model (one executable; see tests/model_*.cc).
gmlp_add_test(NAME model_test TORCH
  SOURCES model_config_test.cc model_count_test.cc model_encoder_test.cc model_layers_test.cc
          model_parallel_test.cc model_grad_test.cc model_learn_test.cc model_parity_test.cc
          model_policy_test.cc model_provenance_test.cc model_reference.cc model_reference_fnet.cc
          model_reference_gmlp.cc model_reference_mixer.cc model_reference_transformer.cc
          model_serialize_test.cc
  LIBS gmlp::model)
