#!/usr/bin/env python3
"""OpenBLAS's sgemm with beta = 0 (what `mm` asks for) against beta = 1 (accumulate into C).

Calls cblas_sgemm of the OpenBLAS that Debian's LibTorch 1.13 links, through ctypes, at a
training step's shapes, and prints GFLOP/s for each beta (median of 20 calls, 2 threads): the
measurement behind model/gemm.h. Usage: python3 bench/blas_beta.py [path to libopenblas.so.0]
"""
import ctypes
import json
import sys
import time

import numpy as np

LIB = sys.argv[1] if len(sys.argv) > 1 else "/lib/x86_64-linux-gnu/libopenblas.so.0"
ROW_MAJOR, NO_TRANS = 101, 111
SHAPES = [(4096, 128, 384), (4096, 384, 128), (4096, 128, 768), (614, 128, 8192), (1024, 1024, 1024)]


def median_seconds(f, n=20):
    for _ in range(3):
        f()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return sorted(times)[n // 2]


def main():
    blas = ctypes.CDLL(LIB)
    blas.openblas_set_num_threads(2)
    blas.openblas_get_config.restype = ctypes.c_char_p
    config = blas.openblas_get_config().decode()
    ptr = ctypes.c_void_p
    for m, k, n in SHAPES:
        a = np.random.randn(m, k).astype(np.float32)
        b = np.random.randn(k, n).astype(np.float32)
        c = np.zeros((m, n), np.float32)

        def gemm(beta):
            blas.cblas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, ctypes.c_float(1.0),
                             a.ctypes.data_as(ptr), k, b.ctypes.data_as(ptr), n,
                             ctypes.c_float(beta), c.ctypes.data_as(ptr), n)

        gflop = 2.0 * m * k * n / 1e9
        rates = {beta: gflop / median_seconds(lambda: gemm(beta)) for beta in (0.0, 1.0)}
        print(json.dumps({"blas": config, "m": m, "k": k, "n": n, "threads": 2,
                          "gflops_beta0": round(rates[0.0], 1), "gflops_beta1": round(rates[1.0], 1),
                          "beta1_over_beta0": round(rates[1.0] / rates[0.0], 3)}))


if __name__ == "__main__":
    main()
