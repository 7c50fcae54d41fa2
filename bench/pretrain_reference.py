#!/usr/bin/env python3
"""PyTorch reference for the pretraining benchmark: the same MLM training step as
`pretrain_bench` (same encoder shapes read from its config JSON, masked-only MLM head with a
tied decoder, cross-entropy, global-norm clipping, AdamW without decay on biases/LayerNorm),
written the way one would in plain PyTorch, eager or under torch.compile. Prints one JSON line
with tokens/s. Runs on PyTorch 1.13 (CPU) to 2.x (CPU or CUDA).

Usage: pretrain_reference.py --config CONFIG.json --batch 32 --steps 20 --threads 2 [--bf16]
                             [--device cpu|cuda] [--compile]
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm computed in fp32: PyTorch 1.13's CPU autocast passes bf16 activations to
    layer_norm with fp32 weights, which fails; the C++ encoders keep LayerNorm in fp32 too."""

    def forward(self, x):
        return F.layer_norm(x.float(), self.normalized_shape, self.weight, self.bias, self.eps)


class Embeddings(nn.Module):
    def __init__(self, c, with_position):
        super().__init__()
        d = c["d_model"]
        self.token = nn.Embedding(c["vocab_size"], d)
        self.segment = nn.Embedding(c["type_vocab_size"], d)
        self.position = nn.Embedding(c["max_seq_len"], d) if with_position else None
        self.norm = LayerNorm(d, eps=c["layer_norm_eps"])
        self.drop = nn.Dropout(c["dropout"])

    def forward(self, ids):
        x = self.token(ids) + self.segment(torch.zeros_like(ids))
        if self.position is not None:
            x = x + self.position(torch.arange(ids.shape[1], device=ids.device))[None]
        return self.drop(self.norm(x))


class GmlpBlock(nn.Module):
    """x + V(s(GELU(U(LN(x))))), split SGU; aMLP adds a one-head tiny attention on LN(x)."""

    def __init__(self, c, tiny_attention):
        super().__init__()
        d, f, n = c["d_model"], c["d_ffn"], c["max_seq_len"]
        g = f // 2
        self.norm = LayerNorm(d, eps=c["layer_norm_eps"])
        self.proj_in = nn.Linear(d, f)
        self.sgu_norm = LayerNorm(g, eps=c["layer_norm_eps"])
        eps = c["sgu_init_eps"] / n
        self.spatial_weight = nn.Parameter(torch.empty(n, n).uniform_(-eps, eps))
        self.spatial_bias = nn.Parameter(torch.ones(n))
        self.proj_out = nn.Linear(g, d)
        self.drop = nn.Dropout(c["dropout"])
        self.attn = None
        if tiny_attention:
            a = c["attn_size"]
            self.attn_size = a
            self.attn = nn.Linear(d, 3 * a)
            self.attn_out = nn.Linear(a, g)

    def forward(self, x):  # (B, n, d)
        n = x.shape[1]
        h = self.norm(x)
        z = F.gelu(self.proj_in(h))
        z1, z2 = z.chunk(2, dim=-1)
        z2 = self.sgu_norm(z2)
        z2 = torch.einsum("ij,bjc->bic", self.spatial_weight[:n, :n], z2) + self.spatial_bias[:n, None]
        if self.attn is not None:
            q, k, v = self.attn(h).chunk(3, dim=-1)
            w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.attn_size), dim=-1)
            z2 = z2 + self.attn_out(w @ v)
        return x + self.drop(self.proj_out(z1 * z2))


class TransformerLayer(nn.Module):
    """BERT's post-LN layer, or the pre-LN variant when the config says pre_ln."""

    def __init__(self, c):
        super().__init__()
        self.pre_ln = c.get("pre_ln", False)
        d, f = c["d_model"], c["d_ffn"]
        self.heads = c["n_heads"]
        self.qkv = nn.Linear(d, 3 * d)
        self.attn_out = nn.Linear(d, d)
        self.norm1 = LayerNorm(d, eps=c["layer_norm_eps"])
        self.ff1 = nn.Linear(d, f)
        self.ff2 = nn.Linear(f, d)
        self.norm2 = LayerNorm(d, eps=c["layer_norm_eps"])
        self.drop = nn.Dropout(c["dropout"])

    def forward(self, x):
        if self.pre_ln:
            x = x + self.drop(self.attn_out(self.attend(self.norm1(x))))
            return x + self.drop(self.ff2(F.gelu(self.ff1(self.norm2(x)))))
        x = self.norm1(x + self.drop(self.attn_out(self.attend(x))))
        return self.norm2(x + self.drop(self.ff2(F.gelu(self.ff1(x)))))

    def attend(self, x):
        B, n, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).view(B, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        w = self.drop(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1))
        return (w @ v).transpose(1, 2).reshape(B, n, d)


class MlmModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        arch = c["arch"]
        d = c["d_model"]
        self.emb = Embeddings(c, with_position=arch == "transformer")
        if arch == "transformer":
            self.layers = nn.ModuleList([TransformerLayer(c) for _ in range(c["n_layers"])])
            pre_ln = c.get("pre_ln", False)
            self.final_norm = LayerNorm(d, eps=c["layer_norm_eps"]) if pre_ln else nn.Identity()
        else:
            self.layers = nn.ModuleList([GmlpBlock(c, arch == "amlp") for _ in range(c["n_layers"])])
            self.final_norm = LayerNorm(d, eps=c["layer_norm_eps"])
        self.head_dense = nn.Linear(d, d)
        self.head_norm = LayerNorm(d, eps=c["layer_norm_eps"])
        self.head_bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        # BERT's init, as the C++ encoders: N(0, init_std^2) weights, zero biases.
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=c["init_std"])
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids, masked_index):
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x)
        rows = self.final_norm(x.reshape(-1, x.shape[-1]).index_select(0, masked_index))
        h = self.head_norm(F.gelu(self.head_dense(rows)))
        return F.linear(h, self.emb.token.weight, self.head_bias)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True, help="EncoderConfig JSON (pretrain_bench writes it)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--mask_rate", type=float, default=0.15)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2.x)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    with open(args.config) as f:
        c = json.load(f)
    n, V = c["max_seq_len"], c["vocab_size"]
    device = torch.device(args.device)
    model = MlmModel(c).to(device)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-4, eps=1e-6)
    forward = torch.compile(model) if args.compile else model
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(5, V, (args.batch, n), generator=g)
    masked = torch.rand(args.batch * n, generator=g) < args.mask_rate
    masked_index = masked.nonzero().squeeze(1)
    labels = ids.view(-1)[masked_index].clone()
    ids.view(-1)[masked_index] = 4
    ids, masked_index, labels = ids.to(device), masked_index.to(device), labels.to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            logits = forward(ids, masked_index)
        loss = F.cross_entropy(logits.float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss  # read back once, after the timed loop, as gmlp does between log lines

    def wait():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(args.warmup):  # torch.compile compiles here
        step()
    wait()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    loss = loss.item()
    elapsed = time.perf_counter() - start
    print(json.dumps({"impl": "pytorch-compile" if args.compile else "pytorch",
                      "torch": torch.__version__, "arch": c["arch"], "device": str(device),
                      "bf16": args.bf16, "batch": args.batch,
                      "tokens_per_s": args.batch * n * args.steps / elapsed,
                      "step_ms": 1000 * elapsed / args.steps, "loss": loss}))


if __name__ == "__main__":
    main()
