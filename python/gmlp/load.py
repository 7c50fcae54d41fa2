"""Loading what `gmlp export` writes: a folder (config.json + model.safetensors) or a lone
model.safetensors whose metadata holds "kind" and "model" (JSON strings).

The tensor names are gmlp's C++ module names (model/README.md), the same as this package's
state_dict() keys, so loading is a strict load_state_dict after checking every name and shape
(errors name the file and the tensor).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Tuple, Union

import torch
from torch import nn

from .config import EncoderConfig
from .heads import MlmModel, SequenceClassifier

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.model"
FORMAT_VERSION = 1
KINDS = (MlmModel.kind, SequenceClassifier.kind)


def _read_safetensors(path: str) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    from safetensors import safe_open

    tensors = {}
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata() or {}
        for name in f.keys():
            tensors[name] = f.get_tensor(name)
    return tensors, metadata


def read_export(path: Union[str, os.PathLike]) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor],
                                                         str]:
    """(config, tensors, weights_path) of an export folder or a lone .safetensors file.
    `config` has at least "kind" and "model" (and "task" for a folder's classifier)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        config_path = os.path.join(path, CONFIG_FILE)
        weights_path = os.path.join(path, WEIGHTS_FILE)
        for p in (config_path, weights_path):
            if not os.path.isfile(p):
                raise FileNotFoundError(f"{path}: not a gmlp export folder ({os.path.basename(p)} "
                                        f"is missing; write one with `gmlp export`)")
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        tensors, _ = _read_safetensors(weights_path)
    elif os.path.isfile(path):
        weights_path = path
        tensors, metadata = _read_safetensors(path)
        if "kind" not in metadata or "model" not in metadata:
            raise ValueError(f"{path}: a lone .safetensors needs \"kind\" and \"model\" in its "
                             f"metadata (gmlp export writes them); pass the export folder instead")
        config = {"gmlp_export": int(metadata.get("gmlp_export", FORMAT_VERSION)),
                  "kind": metadata["kind"], "model": json.loads(metadata["model"])}
        if "task" in metadata:
            config["task"] = json.loads(metadata["task"])
    else:
        raise FileNotFoundError(f"{path} does not exist")
    version = config.get("gmlp_export")
    if version != FORMAT_VERSION:
        raise ValueError(f"{path}: gmlp_export format {version!r}; this package reads "
                         f"{FORMAT_VERSION}")
    if config.get("kind") not in KINDS:
        raise ValueError(f"{path}: kind must be one of {'|'.join(KINDS)}, "
                         f"got {config.get('kind')!r}")
    return config, tensors, weights_path


def build_model(config: Dict[str, Any], tensors: Optional[Dict[str, torch.Tensor]] = None
                ) -> nn.Module:
    """The module config["kind"] names, with freshly made (meaningless) weights. The
    classifier's output count comes from task.labels, else from the tensor out.weight."""
    encoder_config = EncoderConfig.from_dict(config["model"])
    if config["kind"] == MlmModel.kind:
        return MlmModel(encoder_config)
    labels = (config.get("task") or {}).get("labels")
    if labels is not None:
        num_outputs = len(labels)
    elif tensors is not None and "out.weight" in tensors:
        num_outputs = tensors["out.weight"].shape[0]
    else:
        raise ValueError("a classifier needs task.labels or the tensor out.weight")
    return SequenceClassifier(encoder_config, num_outputs, labels)


def check_tensors(model: nn.Module, tensors: Dict[str, torch.Tensor], source: str) -> None:
    """Raises ValueError naming every missing, unexpected or mis-shaped tensor."""
    expected = model.state_dict()
    problems = []
    for name in expected:
        if name not in tensors:
            problems.append(f"missing tensor {name} {tuple(expected[name].shape)}")
        elif tuple(tensors[name].shape) != tuple(expected[name].shape):
            problems.append(f"tensor {name} has shape {tuple(tensors[name].shape)}, the model's "
                            f"is {tuple(expected[name].shape)}")
    for name in tensors:
        if name not in expected:
            problems.append(f"unexpected tensor {name} {tuple(tensors[name].shape)}")
    if problems:
        arch = getattr(getattr(model, "config", None), "arch", "?")
        raise ValueError(f"{source}: does not fit a {arch} {type(model).__name__}: "
                         + "; ".join(problems))


def load(path: Union[str, os.PathLike], dtype: Optional[torch.dtype] = torch.float32,
         device: Union[str, torch.device] = "cpu") -> nn.Module:
    """The model of a `gmlp export` folder (or lone .safetensors) as an nn.Module in eval mode:
    an MlmModel or a SequenceClassifier. `dtype`: the weights' dtype (float32 by default, also
    for a bfloat16 export; None keeps the file's)."""
    config, tensors, weights_path = read_export(path)
    model = build_model(config, tensors)
    check_tensors(model, tensors, weights_path)
    if dtype is None:
        floats = [t.dtype for t in tensors.values() if t.is_floating_point()]
        dtype = floats[0] if floats else torch.float32
    model.to(dtype)
    state = {name: t.to(dtype) if t.is_floating_point() else t for name, t in tensors.items()}
    model.load_state_dict(state, strict=True)
    model.export_config = config
    return model.to(device).eval()
