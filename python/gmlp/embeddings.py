"""Input embeddings (model/embeddings.cc): token + segment (+ learned positions for the
Transformer with `position=learned`), then LayerNorm. Dropout is a no-op in eval mode and is
left out."""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .config import EncoderConfig
from .layers import layer_norm


class Embeddings(nn.Module):
    """Parameters: token.weight (V, d), segment.weight (type_vocab_size, d),
    [position.weight (max_seq_len, d)], norm.{weight,bias}."""

    def __init__(self, config: EncoderConfig, with_position: bool):
        super().__init__()
        d = config.d_model
        self.token = nn.Embedding(config.vocab_size, d)
        self.segment = nn.Embedding(config.type_vocab_size, d)
        self.position = nn.Embedding(config.max_seq_len, d) if with_position else None
        self.norm = layer_norm(d, config.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor,
                token_type_ids: Optional[torch.Tensor]) -> torch.Tensor:
        n = input_ids.shape[1]
        x = self.token(input_ids)
        if token_type_ids is None:
            x = x + self.segment.weight[0]
        else:
            x = x + self.segment(token_type_ids)
        if self.position is not None:
            x = x + self.position.weight[:n]
        return self.norm(x)
