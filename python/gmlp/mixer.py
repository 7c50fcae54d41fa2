"""Token-mixing MLP blocks (model/mixer.cc; MLP-Mixer style).

Block: x += W2[:n, :] GELU(W1[:, :n] LN(x) + b1) + b2[:n]   (over positions, padded rows of
       LN(x) zeroed first), then x += channel_out(GELU(channel_in(LN(x)))).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .config import EncoderConfig
from .layers import dense, gelu, layer_norm, mix_positions, zero_padded_rows


class MixerBlock(nn.Module):
    """Parameters: token_norm, token_in_weight (t, n_max), token_in_bias (t), token_out_weight
    (n_max, t), token_out_bias (n_max), channel_norm, channel_in (d -> f), channel_out (f -> d)."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        d, f, t, n_max = config.d_model, config.d_ffn, config.token_mlp_dim, config.max_seq_len
        eps = config.layer_norm_eps
        self.token_norm = layer_norm(d, eps)
        self.token_in_weight = nn.Parameter(torch.zeros(t, n_max))
        self.token_in_bias = nn.Parameter(torch.zeros(t))
        self.token_out_weight = nn.Parameter(torch.zeros(n_max, t))
        self.token_out_bias = nn.Parameter(torch.zeros(n_max))
        self.channel_norm = layer_norm(d, eps)
        self.channel_in = dense(d, f)
        self.channel_out = dense(f, d)

    def forward(self, x_BnD: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
        n = x_BnD.shape[1]
        h = zero_padded_rows(self.token_norm(x_BnD), keep_Bn)
        u_BtD = gelu(mix_positions(self.token_in_weight[:, :n], h) + self.token_in_bias[:, None])
        x = x_BnD + mix_positions(self.token_out_weight[:n], u_BtD) + self.token_out_bias[:n, None]
        return x + self.channel_out(gelu(self.channel_in(self.channel_norm(x))))
