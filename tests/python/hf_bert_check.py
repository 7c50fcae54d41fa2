"""Loads a `gmlp export --format=hf` folder with the real transformers and compares its logits
with gmlp's (tests/export_test.cc).

  hf_bert_check.py FOLDER EXPECTED.safetensors [TEXT]

EXPECTED holds input_ids, token_type_ids, attention_mask (B, n) and gmlp's logits: (B, n, V) for
an MLM model, (B, num_labels) for a classifier. Prints one JSON line: the class that loaded, the
missing, unexpected and mismatched keys from_pretrained reported, and the largest absolute
difference of the logits at real (unpadded) positions; with TEXT, also the ids and type ids
AutoTokenizer gives it from the same folder.
"""
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForSequenceClassification, BertForMaskedLM


def main(folder, expected_path, text=None):
    expected = load_file(expected_path)
    config = AutoConfig.from_pretrained(folder)
    mlm = config.architectures == ["BertForMaskedLM"]
    cls = BertForMaskedLM if mlm else AutoModelForSequenceClassification
    model, info = cls.from_pretrained(folder, output_loading_info=True)
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=expected["input_ids"],
                       token_type_ids=expected["token_type_ids"],
                       attention_mask=expected["attention_mask"]).logits
    want = expected["logits"]
    if mlm:
        real = expected["attention_mask"].bool()
        diff = (logits[real] - want[real]).abs().max().item()
    else:
        diff = (logits - want).abs().max().item()
    tokenized = {}
    if text is not None:
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(folder)
        encoded = tokenizer([text])
        tokenized = {"tokenizer_class": type(tokenizer).__name__,
                     "input_ids": encoded["input_ids"][0],
                     "token_type_ids": encoded["token_type_ids"][0]}
    print(json.dumps({
        **tokenized,
        "class": type(model).__name__,
        "missing": sorted(info["missing_keys"]),
        "unexpected": sorted(info["unexpected_keys"]),
        "mismatched": [str(m) for m in info["mismatched_keys"]],
        "max_abs_diff": diff,
        "tied": model.get_output_embeddings() is None or
                model.get_output_embeddings().weight.data_ptr() ==
                model.get_input_embeddings().weight.data_ptr(),
    }))


if __name__ == "__main__":
    main(*sys.argv[1:])
