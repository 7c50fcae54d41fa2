"""The other side's reader and writer for tests/export_test.cc: PyPI's `safetensors`.

  safetensors_check.py read FILE    prints {name: {dtype, shape, sum}, "__metadata__": {...}}
  safetensors_check.py write FILE   writes the tensors the C++ test expects, with metadata
"""
import json
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file


def main(mode, path):
    if mode == "read":
        tensors = load_file(path)
        with safe_open(path, framework="pt") as f:
            metadata = f.metadata() or {}
        out = {name: {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                      "sum": t.double().sum().item()}
               for name, t in tensors.items()}
        out["__metadata__"] = metadata
        print(json.dumps(out))
    elif mode == "write":
        save_file({"a.f32": torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8,
                   "b.bf16": torch.tensor([1.5, -2.25], dtype=torch.bfloat16),
                   "c.i64": torch.tensor([[7, -9]], dtype=torch.int64),
                   "d.scalar": torch.tensor(3.0, dtype=torch.float64)},
                  path, metadata={"written_by": "safetensors"})
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
