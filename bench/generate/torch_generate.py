"""PyTorch baseline for bench/generate: the same shapes, batched generation with a KV cache
(keys/values concatenated per step, as transformers' DynamicCache does), 64-token prompts, 128
sampled tokens (temperature 1, multinomial), torch.no_grad, 2 threads. Prints one JSON line.
Usage: /usr/bin/python3 torch_generate.py tiny|small|qwen05|qwen15 BATCH [NEW_TOKENS]"""
import json
import resource
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "tiny": (256, 4, 4, 2, 1024, 4096, False),
    "small": (512, 8, 8, 2, 2048, 32000, False),
    "qwen05": (896, 24, 14, 2, 4864, 151936, True),
    "qwen15": (1536, 28, 12, 2, 8960, 151936, True),
}


def rmsnorm(x, w, eps=1e-6):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope(t, cos, sin):
    half = t.shape[-1] // 2
    return t * cos + torch.cat((-t[..., half:], t[..., :half]), -1) * sin


def main():
    which, batch = sys.argv[1], int(sys.argv[2])
    new = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    torch.set_num_threads(2)
    torch.manual_seed(0)
    C, L, NH, NKV, I, V, tie = SHAPES[which]
    HS = C // NH
    g = lambda *s: torch.randn(*s) * 0.02
    emb = g(V, C)
    head = emb if tie else g(V, C)
    layers = [dict(ln1=torch.ones(C), ln2=torch.ones(C), wq=g(NH * HS, C), bq=torch.zeros(NH * HS),
                   wk=g(NKV * HS, C), bk=torch.zeros(NKV * HS), wv=g(NKV * HS, C),
                   bv=torch.zeros(NKV * HS), wo=g(C, NH * HS), wg=g(I, C), wu=g(I, C), wd=g(C, I))
              for _ in range(L)]
    norm = torch.ones(C)
    inv = 1.0 / (1000000.0 ** (torch.arange(0, HS, 2).float() / HS))

    def forward(ids, pos0, cache):
        B, T = ids.shape
        f = torch.arange(pos0, pos0 + T).float()[:, None] * inv[None]
        e = torch.cat((f, f), -1)
        cos, sin = e.cos(), e.sin()
        x = emb[ids]
        for li, w in enumerate(layers):
            h = rmsnorm(x, w["ln1"])
            q = F.linear(h, w["wq"], w["bq"]).view(B, T, NH, HS).transpose(1, 2)
            k = F.linear(h, w["wk"], w["bk"]).view(B, T, NKV, HS).transpose(1, 2)
            v = F.linear(h, w["wv"], w["bv"]).view(B, T, NKV, HS).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            if cache[li] is not None:
                k = torch.cat((cache[li][0], k), 2)
                v = torch.cat((cache[li][1], v), 2)
            cache[li] = (k, v)
            kk = k.repeat_interleave(NH // NKV, 1)
            vv = v.repeat_interleave(NH // NKV, 1)
            s = (q @ kk.transpose(-1, -2)) * HS ** -0.5
            if T > 1:
                S = kk.shape[2]
                mask = torch.full((T, S), float("-inf")).triu(S - T + 1)
                s = s + mask
            a = torch.softmax(s, -1) @ vv
            x = x + F.linear(a.transpose(1, 2).reshape(B, T, -1), w["wo"])
            h = rmsnorm(x, w["ln2"])
            x = x + F.linear(F.silu(F.linear(h, w["wg"])) * F.linear(h, w["wu"]), w["wd"])
        return F.linear(rmsnorm(x[:, -1], norm), head)

    def run(b, prompt_len, n_new):
        ids = torch.randint(0, V, (b, prompt_len))
        cache = [None] * L
        t0 = time.time()
        with torch.no_grad():
            logits = forward(ids, 0, cache)
            nxt = torch.multinomial(torch.softmax(logits, -1), 1)
            ttft = time.time() - t0
            for i in range(n_new - 1):
                logits = forward(nxt, prompt_len + i, cache)
                nxt = torch.multinomial(torch.softmax(logits, -1), 1)
        return time.time() - t0, ttft

    run(1, 8, 2)  # warm-up
    sec, ttft = run(batch, 64, new)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 * 1024.0)
    print(json.dumps({"impl": "pytorch", "shape": which, "batch": batch,
                      "tokens_per_s": round(batch * new / sec, 1), "seconds": round(sec, 3),
                      "ttft_s": round(ttft, 3), "peak_rss_gib": round(rss, 2)}))


if __name__ == "__main__":
    main()
