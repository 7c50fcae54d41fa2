"""Transformer (BERT) blocks (model/transformer.cc): multi-head self-attention with a padding
mask on keys and a GELU feed-forward; post-LN as BERT (pre-LN by config.pre_ln, then the encoder
ends with a LayerNorm). With position=alibi, head h's scores get -slope_h * |i - j| (the
`alibi_slopes` buffer, (H, 1, 1)) and the embeddings have no position table.
"""

from __future__ import annotations

import math
from typing import List, Optional

import torch
from torch import nn

from .config import EncoderConfig
from .layers import dense, gelu, key_bias, layer_norm


def alibi_slopes(n_heads: int) -> List[float]:
    """ALiBi's head slopes (Press et al. 2022): for H a power of two 2^(-8/H), 2^(-16/H), ...,
    2^(-8); otherwise those of the largest power of two below H, then every other slope of twice
    that many. The export carries them as a buffer; this is for a model built from a config."""
    pow2 = 1
    while pow2 * 2 <= n_heads:
        pow2 *= 2

    def geometric(count: int) -> List[float]:
        ratio = 2.0 ** (-8.0 / count)
        return [ratio ** i for i in range(1, count + 1)]

    slopes = geometric(pow2)
    finer = geometric(2 * pow2)
    i = 0
    while len(slopes) < n_heads:
        slopes.append(finer[i])
        i += 2
    return slopes


class TransformerBlock(nn.Module):
    """Parameters: attn_qkv (d -> 3d, rows [q; k; v], heads contiguous in each), attn_out,
    attn_norm, ffn_in (d -> f), ffn_out (f -> d), ffn_norm; buffer alibi_slopes for ALiBi."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        d, f, eps = config.d_model, config.d_ffn, config.layer_norm_eps
        self.n_heads = config.n_heads
        self.pre_ln = config.pre_ln
        self.attn_qkv = dense(d, 3 * d)
        self.attn_out = dense(d, d)
        self.attn_norm = layer_norm(d, eps)
        self.ffn_in = dense(d, f)
        self.ffn_out = dense(f, d)
        self.ffn_norm = layer_norm(d, eps)
        if config.position == "alibi":
            slopes = torch.tensor(alibi_slopes(self.n_heads), dtype=torch.float32)
            self.register_buffer("alibi_slopes", slopes.view(self.n_heads, 1, 1))
        else:
            self.alibi_slopes = None

    def self_attention(self, h_BnD: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
        B, n, d = h_BnD.shape
        H = self.n_heads
        k_size = d // H
        # (B, n, 3, H, k) -> three (B, H, n, k)
        q, k, v = self.attn_qkv(h_BnD).view(B, n, 3, H, k_size).permute(2, 0, 3, 1, 4).unbind(0)
        scores_BHnn = torch.matmul(q * (1.0 / math.sqrt(k_size)), k.transpose(2, 3))
        if self.alibi_slopes is not None:
            pos = torch.arange(n, dtype=self.alibi_slopes.dtype, device=h_BnD.device)
            alibi_Hnn = -(self.alibi_slopes * (pos[None, :] - pos[:, None]).abs())
            scores_BHnn = scores_BHnn + alibi_Hnn.to(scores_BHnn.dtype)
        bias = key_bias(keep_Bn, scores_BHnn.dtype)
        if bias is not None:
            scores_BHnn = scores_BHnn + bias.unsqueeze(1)
        o_BHnK = torch.matmul(torch.softmax(scores_BHnn, dim=-1), v)
        return self.attn_out(o_BHnK.transpose(1, 2).reshape(B, n, d))

    def ffn(self, h: torch.Tensor) -> torch.Tensor:
        return self.ffn_out(gelu(self.ffn_in(h)))

    def forward(self, x_BnD: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
        if self.pre_ln:
            x = x_BnD + self.self_attention(self.attn_norm(x_BnD), keep_Bn)
            return x + self.ffn(self.ffn_norm(x))
        y = self.attn_norm(x_BnD + self.self_attention(x_BnD, keep_Bn))
        return self.ffn_norm(y + self.ffn(y))
