# Pretraining stage: optimizers, schedule, gradient sync (2 Gloo ranks as threads), trainer
# (accumulation, checkpoints, resume, failures) and end-to-end runs of `gmlp pretrain`.
gmlp_add_test(NAME pretrain_test TORCH
  SOURCES pretrain_optim_test.cc pretrain_dist_test.cc pretrain_agent_store_test.cc pretrain_trainer_test.cc
          pretrain_e2e_test.cc pretrain_launch_test.cc pretrain_test_util.cc
  LIBS gmlp::pretrain)
