"""gMLP and aMLP blocks (model/gmlp.cc; "Pay Attention to MLPs", Liu et al. 2021).

Block: x + out(s(GELU(U(LN x)))), with the Spatial Gating Unit s by config.sgu, W (n x n) mixing
positions and b (n), both sliced from (max_seq_len, max_seq_len) and (max_seq_len) to the input
length n:
    split            s = Z1 * (W LN(Z2) + b [+ attn])   U is two projections, in_z1 and in_z2
    multiplicative   s = Z  * (W LN(Z)  + b [+ attn])   U is in_z
    additive         s = Z  + (W LN(Z)  + b [+ attn])
    linear           s =       W LN(Z)  + b [+ attn]
Padded rows of LN(Z2) (LN(Z)) are zeroed before W mixes positions. aMLP adds a tiny single-head
attention to the gate: attn = attn_out(softmax(q k^T / sqrt(a) + padding bias) v), with
q k v = attn_qkv(LN x) (attn_input=block) or attn_qkv(Z) (expanded; Z = [Z1, Z2] for split).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn

from .config import EncoderConfig
from .layers import dense, gelu, key_bias, layer_norm, mix_positions, zero_padded_rows


class GmlpBlock(nn.Module):
    """Parameters: norm, in_z1 + in_z2 (split) or in_z, sgu_norm, spatial_weight (n_max, n_max),
    spatial_bias (n_max), out, and for aMLP attn_qkv (-> 3a) and attn_out (a -> gate width)."""

    def __init__(self, config: EncoderConfig, attn_size: int = 0):
        """attn_size: the tiny attention's width, 0 for none (the gMLP row; aMLP's passes its own)."""
        super().__init__()
        d, f, g, n_max = config.d_model, config.d_ffn, config.gate_width, config.max_seq_len
        eps = config.layer_norm_eps
        self.sgu = config.sgu
        self.split = config.sgu == "split"
        self.tiny_attention = attn_size > 0
        self.attn_input = config.attn_input
        self.attn_size = attn_size
        self.norm = layer_norm(d, eps)
        if self.split:
            self.in_z1 = dense(d, g)
            self.in_z2 = dense(d, g)
        else:
            self.in_z = dense(d, f)
        self.sgu_norm = layer_norm(g, eps)
        self.spatial_weight = nn.Parameter(torch.zeros(n_max, n_max))
        self.spatial_bias = nn.Parameter(torch.ones(n_max))
        self.out = dense(g, d)
        if self.tiny_attention:
            attn_in = d if config.attn_input == "block" else f
            self.attn_qkv = dense(attn_in, 3 * attn_size)
            self.attn_out = dense(attn_size, g)

    def spatial_projection(self, v_BnG: torch.Tensor,
                           keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
        """W[:n, :n] v + b[:n] along the sequence axis, padded rows of v zeroed first."""
        n = v_BnG.shape[1]
        v_BnG = zero_padded_rows(v_BnG, keep_Bn)
        return mix_positions(self.spatial_weight[:n, :n], v_BnG) + self.spatial_bias[:n, None]

    def attention(self, qkv_Bn3A: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
        """aMLP's tiny attention: one head of size a, padded keys masked."""
        q, k, v = qkv_Bn3A.split(self.attn_size, dim=-1)
        scores_Bnn = torch.matmul(q * (1.0 / math.sqrt(self.attn_size)), k.transpose(1, 2))
        bias = key_bias(keep_Bn, scores_Bnn.dtype)
        if bias is not None:
            scores_Bnn = scores_Bnn + bias
        return self.attn_out(torch.matmul(torch.softmax(scores_Bnn, dim=-1), v))

    def forward(self, x_BnD: torch.Tensor, keep_Bn: Optional[torch.Tensor]) -> torch.Tensor:
        h = self.norm(x_BnD)
        if self.split:
            z1, z2 = gelu(self.in_z1(h)), gelu(self.in_z2(h))
            gate = self.spatial_projection(self.sgu_norm(z2), keep_Bn)
            if self.tiny_attention:
                attn_in = h if self.attn_input == "block" else torch.cat([z1, z2], dim=-1)
                gate = gate + self.attention(self.attn_qkv(attn_in), keep_Bn)
            s = z1 * gate
        else:
            z = gelu(self.in_z(h))
            gate = self.spatial_projection(self.sgu_norm(z), keep_Bn)
            if self.tiny_attention:
                attn_in = h if self.attn_input == "block" else z
                gate = gate + self.attention(self.attn_qkv(attn_in), keep_Bn)
            if self.sgu == "multiplicative":
                s = z * gate
            elif self.sgu == "additive":
                s = z + gate
            else:  # linear
                s = gate
        return x_BnD + self.out(s)
