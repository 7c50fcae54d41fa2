"""The encoder body every architecture shares (model/stacked_encoder.cc): embeddings ->
blocks.<i> -> final_norm, and the arch table saying, per arch, which block, whether the
embeddings add learned positions and whether a final LayerNorm follows the last block."""

from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Optional

import torch
from torch import nn

from .config import EncoderConfig
from .embeddings import Embeddings
from .fnet import FnetBlock
from .gmlp import GmlpBlock
from .layers import layer_norm
from .mixer import MixerBlock
from .transformer import TransformerBlock


class ArchSpec(NamedTuple):
    label: str
    block: Callable[[EncoderConfig], nn.Module]
    position_embeddings: Callable[[EncoderConfig], bool]
    final_norm: Callable[[EncoderConfig], bool]


# model/arch.cc's rows.
ARCH_TABLE: Dict[str, ArchSpec] = {
    "transformer": ArchSpec("Transformer", TransformerBlock,
                            lambda c: c.position == "learned", lambda c: c.pre_ln),
    "gmlp": ArchSpec("gMLP", GmlpBlock, lambda c: False, lambda c: True),
    "amlp": ArchSpec("aMLP", lambda c: GmlpBlock(c, c.attn_size), lambda c: False, lambda c: True),
    "mixer": ArchSpec("token-mixing MLP", MixerBlock, lambda c: False, lambda c: True),
    "fnet": ArchSpec("FNet", FnetBlock, lambda c: True, lambda c: False),
}


class Encoder(nn.Module):
    """Parameters: embeddings.*, blocks.<i>.*, [final_norm.*]. forward returns (B, n, d)."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        config.validate()
        spec = ARCH_TABLE[config.arch]
        self.config = config
        self.embeddings = Embeddings(config, spec.position_embeddings(config))
        self.blocks = nn.ModuleList(spec.block(config) for _ in range(config.n_layers))
        self.final_norm = (layer_norm(config.d_model, config.layer_norm_eps)
                           if spec.final_norm(config) else None)

    def forward(self, input_ids: torch.Tensor, token_type_ids: Optional[torch.Tensor] = None,
                attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (B, n), got {tuple(input_ids.shape)}")
        n = input_ids.shape[1]
        if not 1 <= n <= self.config.max_seq_len:
            raise ValueError(f"sequence length {n} is outside [1, max_seq_len = "
                             f"{self.config.max_seq_len}]")
        for name, t in (("token_type_ids", token_type_ids), ("attention_mask", attention_mask)):
            if t is not None and t.shape != input_ids.shape:
                raise ValueError(f"{name} {tuple(t.shape)} must match input_ids "
                                 f"{tuple(input_ids.shape)}")
        keep = None
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            keep = attention_mask.bool()
        x = self.embeddings(input_ids, token_type_ids)
        for block in self.blocks:
            x = block(x, keep)
        return self.final_norm(x) if self.final_norm is not None else x
