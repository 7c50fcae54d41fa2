"""gmlp's input layout from text: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` with segment ids
0/1, longest-first truncation to max_len, batches padded with [PAD] to their longest member
(finetune/encode.cc). Needs the `sentencepiece` package (imported when a Tokenizer is made)."""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional, Sequence, Union

import torch


class Tokenizer:
    """Tokenizer(folder): the export's tokenizer.model and ids from its config.json.
    tokenizer(texts, texts_b=None) -> {"input_ids", "token_type_ids", "attention_mask"}, (B, n)
    int64 tensors for model(**batch). A classifier's export gives max_len and whether the task
    reads pairs; otherwise max_len is the encoder's max_seq_len."""

    def __init__(self, folder: Union[str, os.PathLike], max_len: Optional[int] = None):
        try:
            import sentencepiece
        except ImportError as e:
            raise ImportError("gmlp.Tokenizer needs the sentencepiece package "
                              "(pip install sentencepiece)") from e
        folder = os.fspath(folder)
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        tok = config.get("tokenizer", {})
        self.pad_id = int(tok.get("pad_id", 0))
        self.unk_id = int(tok.get("unk_id", 1))
        self.cls_id = int(tok.get("cls_id", 2))
        self.sep_id = int(tok.get("sep_id", 3))
        self.mask_id = int(tok.get("mask_id", 4))
        task = config.get("task") or {}
        self.pair = bool(task.get("pair", False))
        self.max_len = int(max_len or task.get("max_len") or config["model"]["max_seq_len"])
        self.sp = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(folder, tok.get("file", "tokenizer.model")))

    def encode(self, text: str) -> List[int]:
        """The ids of `text`, no special tokens (gmlp's Tokenizer::Encode)."""
        return list(self.sp.encode(text))

    def pack(self, a: List[int], b: Optional[List[int]] = None) -> Dict[str, List[int]]:
        """One input: [CLS] a [SEP] (b [SEP]), truncated longest-first (b on ties) to max_len."""
        a = list(a)
        if b is not None:
            b = list(b)
            budget = max(self.max_len - 3, 0)
            while len(a) + len(b) > budget:
                (a if len(a) > len(b) else b).pop()
        else:
            a = a[:max(self.max_len - 2, 0)]
        ids = [self.cls_id] + a + [self.sep_id]
        segments = [0] * len(ids)
        if b is not None:
            ids += b + [self.sep_id]
            segments += [1] * (len(b) + 1)
        return {"input_ids": ids, "token_type_ids": segments}

    def __call__(self, texts: Union[str, Sequence[str]],
                 texts_b: Optional[Union[str, Sequence[str]]] = None) -> Dict[str, torch.Tensor]:
        if isinstance(texts, str):
            texts = [texts]
        if isinstance(texts_b, str):
            texts_b = [texts_b]
        if texts_b is not None and len(texts_b) != len(texts):
            raise ValueError(f"{len(texts)} first texts but {len(texts_b)} second texts")
        if texts_b is None and self.pair:
            texts_b = [""] * len(texts)  # a pair task reads [CLS] a [SEP] [SEP] then
        rows = [self.pack(self.encode(a), None if texts_b is None else self.encode(texts_b[i]))
                for i, a in enumerate(texts)]
        n = max(len(r["input_ids"]) for r in rows)
        out = {k: torch.full((len(rows), n), v, dtype=torch.long)
               for k, v in (("input_ids", self.pad_id), ("token_type_ids", 0),
                            ("attention_mask", 0))}
        for i, r in enumerate(rows):
            m = len(r["input_ids"])
            out["input_ids"][i, :m] = torch.tensor(r["input_ids"])
            out["token_type_ids"][i, :m] = torch.tensor(r["token_type_ids"])
            out["attention_mask"][i, :m] = 1
        return out
