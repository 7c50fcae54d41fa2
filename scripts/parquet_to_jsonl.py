#!/usr/bin/env python3
"""Parquet to JSON lines for `gmlp prepare` / `gmlp tokenizer train` (which read no Parquet).

    python3 scripts/parquet_to_jsonl.py IN.parquet OUT.jsonl[.zst|.gz] [--column=text]

Writes one {"text": ...} object per row from the string column --column (default "text"),
streaming one row group at a time. Rows whose value is null are skipped and counted. The output
is zstd-compressed when its name ends in .zst (needs PyPI's `zstandard`, or the `zstd` CLI on
PATH), gzip when it ends in .gz, plain otherwise. Needs PyPI's `pyarrow`.
"""
import argparse
import gzip
import io
import json
import shutil
import subprocess
import sys


def open_output(path):
    if path.endswith(".gz"):
        return gzip.open(path, "wt", encoding="utf-8"), None
    if path.endswith(".zst"):
        try:
            import zstandard

            raw = open(path, "wb")
            writer = zstandard.ZstdCompressor(level=3).stream_writer(raw)
            return io.TextIOWrapper(writer, encoding="utf-8"), None
        except ImportError:
            if shutil.which("zstd") is None:
                sys.exit(f"parquet_to_jsonl: {path}: writing .zst needs `pip install zstandard` "
                         "or the zstd CLI")
            proc = subprocess.Popen(["zstd", "-q", "-f", "-3", "-o", path], stdin=subprocess.PIPE)
            return io.TextIOWrapper(proc.stdin, encoding="utf-8"), proc
    return open(path, "w", encoding="utf-8"), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--column", default="text", help="string column with the document text")
    args = ap.parse_args()
    try:
        import pyarrow.parquet as pq
    except ImportError:
        sys.exit("parquet_to_jsonl: needs pyarrow: python3 -m pip install pyarrow")
    pf = pq.ParquetFile(args.input)
    if args.column not in pf.schema_arrow.names:
        sys.exit(f"parquet_to_jsonl: {args.input}: no column {args.column!r}; its columns: "
                 f"{', '.join(pf.schema_arrow.names)}; pass --column=NAME")
    out, proc = open_output(args.output)
    rows = nulls = 0
    for batch in pf.iter_batches(columns=[args.column]):
        for value in batch.column(0).to_pylist():
            if value is None:
                nulls += 1
                continue
            if not isinstance(value, str):
                sys.exit(f"parquet_to_jsonl: {args.input}: column {args.column!r} holds "
                         f"{type(value).__name__}, not strings")
            out.write(json.dumps({"text": value}, ensure_ascii=False) + "\n")
            rows += 1
    out.close()
    if proc is not None and proc.wait() != 0:
        sys.exit(f"parquet_to_jsonl: zstd failed writing {args.output}")
    print(f"parquet_to_jsonl: {args.output}: {rows} documents ({nulls} null rows skipped)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
