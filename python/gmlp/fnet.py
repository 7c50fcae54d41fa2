"""FNet blocks (model/fnet.cc; Lee-Thorp et al. 2021).

Block (post-LN): x = LN(x + Re(fft2(x))), then x = LN(x + ffn_out(GELU(ffn_in(x)))). The 2-D
transform of sequence b runs over its real length (its first keep_Bn[b].sum() rows), so padding
does not reach real positions; padded rows mix nothing in and get zeros.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .config import EncoderConfig
from .layers import dense, gelu, layer_norm


def _real_fft2(x: torch.Tensor) -> torch.Tensor:
    # torch.fft takes float32 and float64; bf16/fp16 inputs are transformed in float32.
    wide = x if x.dtype in (torch.float32, torch.float64) else x.float()
    return torch.fft.fft2(wide).real.to(x.dtype)


def fourier_mix(x_BnD: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
    """Re(DFT over the sequence and hidden axes), per sequence over its real length."""
    if keep_Bn is None:
        return _real_fft2(x_BnD)
    out = torch.zeros_like(x_BnD)
    for b, length in enumerate(keep_Bn.sum(dim=1).tolist()):
        out[b, :length] = _real_fft2(x_BnD[b, :length])
    return out


class FnetBlock(nn.Module):
    """Parameters: mix_norm, ffn_in (d -> f), ffn_out (f -> d), ffn_norm."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        d, f, eps = config.d_model, config.d_ffn, config.layer_norm_eps
        self.mix_norm = layer_norm(d, eps)
        self.ffn_in = dense(d, f)
        self.ffn_out = dense(f, d)
        self.ffn_norm = layer_norm(d, eps)

    def forward(self, x_BnD: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
        y = self.mix_norm(x_BnD + fourier_mix(x_BnD, keep_Bn))
        return self.ffn_norm(y + self.ffn_out(gelu(self.ffn_in(y))))
