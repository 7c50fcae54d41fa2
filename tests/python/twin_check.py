#!/usr/bin/env python3
"""Checks the PyTorch twin (python/, the installed `gmlp` package) against gmlp's own outputs.
Run by tests/export_twin_test.cc with the torch 2.11 venv's python (scripts/python_env.sh).

  twin_check.py compare --case LABEL EXPORT EXPECTED TOL [--case ...]
      EXPECTED (safetensors, written by the C++ test): input_ids, token_type_ids, attention_mask
      (B, n) and gmlp's hidden_states (B, n, d) and logits ((B, n, V) MLM, (B, C) classifier).
      gmlp.load(EXPORT) runs the same inputs; max |twin - gmlp| over the real (unpadded)
      positions is printed per tensor, one line per case:
        twin_check: case=LABEL hidden_states=1.2e-07 logits=3.4e-07 tol=0.0001 ok
      Exit status 1 when any case is above its tolerance or fails to load (the error is printed).

  twin_check.py classify EXPORT SENTENCES LABELS_OUT IDS_OUT
      One sentence per line of SENTENCES through gmlp.Tokenizer and the loaded classifier: the
      predicted label (task.labels) per line to LABELS_OUT, the tokenizer's ids (no specials,
      space-separated, as `gmlp tokenizer encode`) per line to IDS_OUT.
"""

import argparse
import sys

import torch
from safetensors.torch import load_file

import gmlp  # the installed package (pip install ./python), not a path into the tree


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        raise ValueError(f"shape {tuple(a.shape)} vs gmlp's {tuple(b.shape)}")
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def compare(label: str, export: str, expected_path: str, tol: float) -> bool:
    try:
        expected = load_file(expected_path)
        model = gmlp.load(export)
        ids, segments = expected["input_ids"], expected["token_type_ids"]
        mask = expected["attention_mask"]
        with torch.no_grad():
            out = model(ids, token_type_ids=segments, attention_mask=mask)
        real = mask.bool()
        diffs = {"hidden_states": max_abs_diff(out.hidden_states[real],
                                               expected["hidden_states"][real])}
        if expected["logits"].dim() == 3:  # MLM: every real position
            diffs["logits"] = max_abs_diff(out.logits[real], expected["logits"][real])
        else:  # classifier: one row per sequence
            diffs["logits"] = max_abs_diff(out.logits, expected["logits"])
    except Exception as e:  # noqa: BLE001 - reported, and the case fails
        print(f"twin_check: case={label} error: {type(e).__name__}: {e}")
        return False
    ok = all(d <= tol for d in diffs.values())
    values = " ".join(f"{k}={v:.3g}" for k, v in diffs.items())
    print(f"twin_check: case={label} {values} tol={tol:g} {'ok' if ok else 'FAIL'}")
    return ok


def classify(export: str, sentences_path: str, labels_out: str, ids_out: str) -> None:
    model = gmlp.load(export)
    tokenizer = gmlp.Tokenizer(export)
    if model.labels is None:
        raise ValueError(f"{export}: not a classifier export")
    with open(sentences_path, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f]
    predictions = []
    with torch.no_grad():
        for start in range(0, len(sentences), 64):
            batch = tokenizer(sentences[start:start + 64])
            predictions += model(**batch).logits.argmax(-1).tolist()
    with open(labels_out, "w", encoding="utf-8") as f:
        f.writelines(model.labels[p] + "\n" for p in predictions)
    with open(ids_out, "w", encoding="utf-8") as f:
        f.writelines(" ".join(map(str, tokenizer.encode(s))) + "\n" for s in sentences)
    print(f"twin_check: classified {len(sentences)} sentences with {export}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compare")
    p.add_argument("--case", nargs=4, action="append", required=True,
                   metavar=("LABEL", "EXPORT", "EXPECTED", "TOL"))
    p = sub.add_parser("classify")
    p.add_argument("export")
    p.add_argument("sentences")
    p.add_argument("labels_out")
    p.add_argument("ids_out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"twin_check: gmlp {gmlp.__version__} from {gmlp.__file__}, torch {torch.__version__}")
    if args.command == "classify":
        classify(args.export, args.sentences, args.labels_out, args.ids_out)
        return 0
    results = [compare(label, export, expected, float(tol))
               for label, export, expected, tol in args.case]
    failed = results.count(False)
    print(f"twin_check: {len(results)} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
