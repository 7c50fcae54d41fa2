// Anchor for the precompiled <torch/torch.h> (see gmlp_use_torch_pch).
