"""PyTorch baseline for bench/lora: one GRPO train step with LoRA on the same shape and batch as
bench_lora.cpp. The model is bench/train/torch_train.py's (Qwen2 layout), with every linear of every
layer wrapped as y = x W^T + b + (alpha/r) (x A^T) B^T, the base frozen (requires_grad False). A step
is: reference logprobs with the adapters off (no_grad), then per micro-batch the clipped surrogate
with old logprob -2 and advantages +-1 plus a k2 KL loss (coef 0.001) to the reference, backward,
clip_grad_norm_ 1.0 and AdamW over the adapters. Optional per-layer torch.utils.checkpoint.
Prints one JSON line (seconds per step, peak RSS).
Usage: /usr/bin/python3 torch_lora_step.py SHAPE CKPT(0|1) [batch] [seq] [steps] [rank] [micro_seqs]"""
import json
import os
import resource
import sys
import time

import torch
import torch.utils.checkpoint

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import torch_train  # noqa: E402

SHAPES = dict(torch_train.SHAPES)
SHAPES["qwen15"] = (1536, 28, 12, 2, 8960, 151936, 8, 256, True)
SHAPES["qwen7"] = (3584, 28, 28, 4, 18944, 152064, 8, 256, False)


class LoraLinear(torch.nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.a = torch.nn.Parameter(torch.empty(r, base.in_features).uniform_(-1, 1) / base.in_features ** 0.5)
        self.b = torch.nn.Parameter(torch.zeros(base.out_features, r))
        self.s = alpha / r
        self.on = True

    def forward(self, x):
        y = self.base(x)
        return y + self.s * ((x @ self.a.T) @ self.b.T) if self.on else y


def main():
    which = sys.argv[1]
    ckpt = sys.argv[2] == "1"
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    seq = int(sys.argv[4]) if len(sys.argv) > 4 else 256
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    rank = int(sys.argv[6]) if len(sys.argv) > 6 else 16
    micro = int(sys.argv[7]) if len(sys.argv) > 7 else 4
    torch.set_num_threads(int(os.environ.get("TRINITY_THREADS", "2")))
    torch.manual_seed(0)
    c, layers, nh, nkv, inter, vocab, _, _, tie = SHAPES[which]
    t0 = time.time()
    with torch.no_grad():
        model = torch_train.Model(c, layers, nh, nkv, inter, vocab, tie)
    for p in model.parameters():
        p.requires_grad_(False)
    loras = []
    for layer in model.layers:
        for name in ("q", "k", "v", "o", "g", "u", "d"):
            w = LoraLinear(getattr(layer, name), rank, 2.0 * rank)
            setattr(layer, name, w)
            loras.append(w)
    params = [p for w in loras for p in (w.a, w.b)]
    opt = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.01)
    setup_s = time.time() - t0
    ids = torch.randint(0, vocab, (batch, seq))
    prompt = seq // 4
    adv = torch.tensor([1.0 if b % 2 else -1.0 for b in range(batch)])[:, None]

    def logprobs(x_ids):
        B, T = x_ids.shape
        f = torch.arange(T).float()[:, None] * model.inv[None]
        emb = torch.cat((f, f), -1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = model.emb(x_ids)
        for layer in model.layers:
            if ckpt:
                x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, mask, use_reentrant=False)
            else:
                x = layer(x, cos, sin, mask)
        x = model.norm(x)
        w = model.emb.weight if model.head is None else model.head.weight
        logits = x[:, prompt - 1:-1] @ w.T  # response positions only
        return torch.log_softmax(logits, -1).gather(-1, x_ids[:, prompt:, None])[..., 0]

    def step():
        t_ref = time.time()
        with torch.no_grad():
            for w in loras:
                w.on = False
            ref = torch.cat([logprobs(ids[i:i + micro]) for i in range(0, batch, micro)])
            for w in loras:
                w.on = True
        t_upd = time.time()
        opt.zero_grad()
        ntok = batch * (seq - prompt)
        for i in range(0, batch, micro):
            lp = logprobs(ids[i:i + micro])
            ratio = torch.exp(lp + 2.0)
            a = adv[i:i + micro]
            pg = torch.max(-a * ratio, -a * ratio.clamp(0.8, 1.2))
            kl = 0.5 * (lp - ref[i:i + micro]) ** 2
            ((pg + 0.001 * kl).sum() / ntok).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return t_upd - t_ref, time.time() - t_upd

    ref_s = upd_s = 0.0
    for _ in range(steps):
        r, u = step()
        ref_s += r
        upd_s += u
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 * 1024.0)
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "shape": which, "mode": "lora",
                      "checkpointing": ckpt, "tokens": batch * seq, "step_s": round((ref_s + upd_s) / steps, 2),
                      "ref_s": round(ref_s / steps, 2), "update_s": round(upd_s / steps, 2),
                      "setup_s": round(setup_s, 1), "peak_rss_gib": round(rss, 2)}))


if __name__ == "__main__":
    main()
