"""EncoderConfig: the architecture of an encoder, as gmlp's model/config.h has it.

The keys are the C++ field names (config.json's "model" section). Unknown keys are refused so
that a config written by a newer gmlp is never silently misread.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

ARCHS = ("transformer", "gmlp", "amlp", "mixer", "fnet")
SGU_VARIANTS = ("split", "multiplicative", "additive", "linear")
POSITIONS = ("alibi", "learned")
ATTN_INPUTS = ("block", "expanded")


@dataclasses.dataclass
class EncoderConfig:
    arch: str = "gmlp"
    vocab_size: int = 8192
    max_seq_len: int = 128
    type_vocab_size: int = 2
    d_model: int = 128
    n_layers: int = 4
    d_ffn: int = 768
    n_heads: int = 2
    sgu: str = "split"
    attn_size: int = 64
    attn_input: str = "block"
    token_mlp_dim: int = 256
    pre_ln: bool = False
    position: str = "learned"
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    init_std: float = 0.02
    sgu_init_eps: float = 1e-3

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EncoderConfig":
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - set(fields))
        if unknown:
            raise ValueError(f"encoder config: unknown key(s) {unknown}")
        config = cls(**dict(d))
        config.validate()
        return config

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def validate(self) -> None:
        for name, allowed in (("arch", ARCHS), ("sgu", SGU_VARIANTS), ("position", POSITIONS),
                              ("attn_input", ATTN_INPUTS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"encoder config: {name} must be one of {'|'.join(allowed)}, "
                                 f"got {getattr(self, name)!r}")
        for name in ("vocab_size", "max_seq_len", "type_vocab_size", "d_model", "n_layers",
                     "d_ffn", "n_heads", "attn_size", "token_mlp_dim"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"encoder config: {name} must be a positive integer, "
                                 f"got {getattr(self, name)!r}")
        if self.arch == "transformer" and self.d_model % self.n_heads != 0:
            raise ValueError(f"encoder config: d_model ({self.d_model}) must be divisible by "
                             f"n_heads ({self.n_heads})")
        if self.arch in ("gmlp", "amlp") and self.sgu == "split" and self.d_ffn % 2 != 0:
            raise ValueError(f"encoder config: sgu=split halves Z, so d_ffn must be even, "
                             f"got {self.d_ffn}")

    @property
    def has_sgu(self) -> bool:
        return self.arch in ("gmlp", "amlp")

    @property
    def gate_width(self) -> int:
        """Width of the SGU's gate (the input of the block's `out`): d_ffn/2 for split."""
        return self.d_ffn // 2 if self.sgu == "split" else self.d_ffn
