"""Pieces the encoders share (model/layers.h): GELU, LayerNorm, dense layers and the padding
masks. Activations here are batch-major (B, n, d); gmlp's C++ keeps them sequence-major, which
changes the memory layout, not the values.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn
from torch.nn import functional as F

# Added to attention scores at padded keys (layers.h: SeqBatch::key_bias_B1N): large but finite,
# so a row with no real key stays finite.
PAD_KEY_BIAS = -1e9


def gelu(x: torch.Tensor) -> torch.Tensor:
    """The exact GELU, x * Phi(x) with erf (not the tanh approximation)."""
    return F.gelu(x)


def layer_norm(dim: int, eps: float) -> nn.LayerNorm:
    """LayerNorm over the last dimension with parameters `weight` and `bias`."""
    return nn.LayerNorm(dim, eps=eps)


def dense(d_in: int, d_out: int) -> nn.Linear:
    """gmlp's Dense: x W^T + b with `weight` (d_out, d_in) and `bias` (d_out)."""
    return nn.Linear(d_in, d_out)


def zero_padded_rows(x_BnC: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
    """x with its padded positions zeroed, before any mixing over positions."""
    return x_BnC if keep_Bn is None else x_BnC * keep_Bn.unsqueeze(-1).to(x_BnC.dtype)


def key_bias(keep_Bn: Optional[torch.Tensor], dtype: torch.dtype) -> Optional[torch.Tensor]:
    """(B, 1, n): 0 at real keys and PAD_KEY_BIAS at padded ones, to add to (B, n, n) scores."""
    if keep_Bn is None:
        return None
    return ((1.0 - keep_Bn.to(dtype)) * PAD_KEY_BIAS).unsqueeze(1)


def mix_positions(w_nn: torch.Tensor, x_BnC: torch.Tensor) -> torch.Tensor:
    """y[b, i, c] = sum_j w[i, j] x[b, j, c]: a projection along the sequence axis."""
    return torch.matmul(w_nn, x_BnC)
