#!/usr/bin/env python3
"""Encodes text with transformers' AutoTokenizer from a folder `gmlp export --format=hf` wrote.

Usage: hf_tokenizer_check.py TOKENIZER_DIR INPUT_JSON [OUTPUT_JSONL]

INPUT_JSON holds {"single": ["text", ...], "pairs": [["a", "b"], ...]}. Writes JSON lines to
OUTPUT_JSONL (default: stdout): first {"class", "is_fast", "transformers", "tokenizers"}, then one
{"input_ids", "token_type_ids", "attention_mask"} per single text and then per pair, in order;
single texts also get "decoded" (skip_special_tokens=True). tests/export_hf_tokenizer_test.cc
compares them with gmlp's own ids.
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask the Hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import tokenizers  # noqa: E402
import transformers  # noqa: E402


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    folder, input_path = sys.argv[1], sys.argv[2]
    with open(input_path, encoding="utf-8") as f:
        inputs = json.load(f)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    lines = [{"class": type(tok).__name__, "is_fast": tok.is_fast,
              "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}]
    fields = ("input_ids", "token_type_ids", "attention_mask")
    single = inputs.get("single", [])
    if single:
        enc = tok(single)
        for i in range(len(single)):
            line = {k: enc[k][i] for k in fields}
            line["decoded"] = tok.decode(enc["input_ids"][i], skip_special_tokens=True)
            lines.append(line)
    pairs = inputs.get("pairs", [])
    if pairs:
        # The list form: tok(a, "") would take "" for no second sentence and drop its [SEP].
        enc = tok([a for a, _ in pairs], [b for _, b in pairs])
        lines += [{k: enc[k][i] for k in fields} for i in range(len(pairs))]
    out = open(sys.argv[3], "w", encoding="utf-8") if len(sys.argv) == 4 else sys.stdout
    for line in lines:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    out.close()


if __name__ == "__main__":
    main()
