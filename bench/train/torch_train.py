"""PyTorch baseline for bench/train: the same model shapes as bench_train.cpp (Qwen2 layout,
batched [B, T, C], manual causal attention with GQA as torch 1.13 has no SDPA), loss = -mean
logprob via log_softmax + gather, torch.optim.AdamW, clip_grad_norm_. Prints one JSON line.
Usage: /usr/bin/python3 torch_train.py tiny|small|qwen05 [steps]"""
import json
import resource
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "tiny": (256, 4, 4, 2, 1024, 4096, 8, 256, False),
    "small": (512, 8, 8, 2, 2048, 32000, 8, 256, False),
    "qwen05": (896, 24, 14, 2, 4864, 151936, 2, 256, True),
}


class RMSNorm(torch.nn.Module):
    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(c))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Layer(torch.nn.Module):
    def __init__(self, c, nh, nkv, inter):
        super().__init__()
        hs = c // nh
        self.nh, self.nkv, self.hs = nh, nkv, hs
        self.ln1, self.ln2 = RMSNorm(c), RMSNorm(c)
        self.q = torch.nn.Linear(c, nh * hs)
        self.k = torch.nn.Linear(c, nkv * hs)
        self.v = torch.nn.Linear(c, nkv * hs)
        self.o = torch.nn.Linear(nh * hs, c, bias=False)
        self.g = torch.nn.Linear(c, inter, bias=False)
        self.u = torch.nn.Linear(c, inter, bias=False)
        self.d = torch.nn.Linear(inter, c, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(B, T, self.nh, self.hs).transpose(1, 2)
        k = self.k(h).view(B, T, self.nkv, self.hs).transpose(1, 2)
        v = self.v(h).view(B, T, self.nkv, self.hs).transpose(1, 2)

        def rope(t):
            half = t.shape[-1] // 2
            return t * cos + torch.cat((-t[..., half:], t[..., :half]), -1) * sin

        q, k = rope(q), rope(k)
        rep = self.nh // self.nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(-1, -2)) * self.hs ** -0.5 + mask
        a = torch.softmax(s, -1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, -1))
        h = self.ln2(x)
        return x + self.d(F.silu(self.g(h)) * self.u(h))


class Model(torch.nn.Module):
    def __init__(self, c, layers, nh, nkv, inter, vocab, tie):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, c)
        self.layers = torch.nn.ModuleList([Layer(c, nh, nkv, inter) for _ in range(layers)])
        self.norm = RMSNorm(c)
        self.head = None if tie else torch.nn.Linear(c, vocab, bias=False)
        hs = c // nh
        inv = 1.0 / (10000.0 ** (torch.arange(0, hs, 2).float() / hs))
        self.inv = inv

    def forward(self, ids):
        B, T = ids.shape
        f = torch.arange(T).float()[:, None] * self.inv[None]
        emb = torch.cat((f, f), -1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.emb(ids)
        for l in self.layers:
            x = l(x, cos, sin, mask)
        x = self.norm(x)
        w = self.emb.weight if self.head is None else self.head.weight
        logits = x[:, :-1] @ w.T
        logp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None])
        return -logp.mean()


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.set_num_threads(2)
    torch.manual_seed(0)
    c, layers, nh, nkv, inter, vocab, b, t, tie = SHAPES[which]
    model = Model(c, layers, nh, nkv, inter, vocab, tie)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)
    ids = torch.randint(0, vocab, (b, t))

    def step():
        opt.zero_grad()
        loss = model(ids)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step()
    t0 = time.time()
    for _ in range(steps):
        step()
    sec = (time.time() - t0) / steps
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 * 1024.0)
    print(json.dumps({"impl": "pytorch", "shape": which, "torch": torch.__version__,
                      "tokens_per_s": round(b * t / sec, 1), "step_s": round(sec, 3),
                      "peak_rss_gib": round(rss, 2)}))


if __name__ == "__main__":
    main()
