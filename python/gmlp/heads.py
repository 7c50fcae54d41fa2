"""Task heads (model/heads.cc): BERT's MLM head with the decoder tied to the token embedding,
and the sequence classifier (pooler on position 0: dense + tanh, then `out`)."""

from __future__ import annotations

import dataclasses
from typing import List, Optional

import torch
from torch import nn

from .config import EncoderConfig
from .encoder import Encoder
from .layers import dense, gelu, layer_norm


@dataclasses.dataclass
class ModelOutput:
    """logits: (B, n, V) for the MLM model, (B, num_outputs) for the classifier;
    hidden_states: (B, n, d), the encoder's output (after its final LayerNorm, if it has one).
    Also readable as a dict: out["logits"]."""

    logits: torch.Tensor
    hidden_states: torch.Tensor

    def __getitem__(self, key: str) -> torch.Tensor:
        return getattr(self, key)

    def keys(self):
        return [f.name for f in dataclasses.fields(self)]


class MlmHead(nn.Module):
    """dense (d -> d), GELU, LayerNorm, then the tied decoder (the encoder's token embedding,
    not a tensor of this module) plus `bias` (V)."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.dense = dense(config.d_model, config.d_model)
        self.norm = layer_norm(config.d_model, config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor, decoder_weight_VD: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(self.norm(gelu(self.dense(hidden))), decoder_weight_VD,
                                          self.bias)


class MlmModel(nn.Module):
    """`encoder` + `mlm_head`; logits at every position (gmlp computes only the masked ones)."""

    kind = "mlm"

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.encoder = Encoder(config)
        self.mlm_head = MlmHead(config)

    def forward(self, input_ids: torch.Tensor, token_type_ids: Optional[torch.Tensor] = None,
                attention_mask: Optional[torch.Tensor] = None) -> ModelOutput:
        hidden = self.encoder(input_ids, token_type_ids, attention_mask)
        logits = self.mlm_head(hidden, self.encoder.embeddings.token.weight)
        return ModelOutput(logits=logits, hidden_states=hidden)


class SequenceClassifier(nn.Module):
    """`encoder`, `pooler` (d -> d, tanh, on position 0) and `out` (d -> num_outputs; 1 output
    = regression). `labels` names the outputs (the export's task.labels)."""

    kind = "sequence_classification"

    def __init__(self, config: EncoderConfig, num_outputs: int,
                 labels: Optional[List[str]] = None):
        super().__init__()
        if num_outputs < 1:
            raise ValueError(f"num_outputs must be >= 1, got {num_outputs}")
        self.config = config
        self.labels = list(labels) if labels is not None else None
        self.encoder = Encoder(config)
        self.pooler = dense(config.d_model, config.d_model)
        self.out = dense(config.d_model, num_outputs)

    def forward(self, input_ids: torch.Tensor, token_type_ids: Optional[torch.Tensor] = None,
                attention_mask: Optional[torch.Tensor] = None) -> ModelOutput:
        hidden = self.encoder(input_ids, token_type_ids, attention_mask)
        logits = self.out(torch.tanh(self.pooler(hidden[:, 0])))
        return ModelOutput(logits=logits, hidden_states=hidden)
