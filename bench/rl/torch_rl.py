"""PyTorch baseline for bench/rl: the GRPO loop of `trinity run` on the arithmetic task, on the same
checkpoint (weights read by tests/golden/torch_model.py, widened to fp32 when stored in bf16, whose
per-sequence model checks this batched one at start-up). Per step: --batch prompts (16) rendered with
the byte tokenizer's chat template, --repeat samples each (8; batched, KV cache, temperature 1, stop at
ids 256/258, <= --max-new new tokens, 8), reward 1 iff stopped and the text is the exact sum (ids >= 256
are no text), GRPO advantages a = (r - mean_g) / (std_g + 1e-6) (unbiased std), PPO-clip (0.2)
token-mean loss with old logprobs = sampling logprobs, AdamW (lr 3e-4, betas 0.9/0.999, wd 0.01), grad
clip 1.0, one optimizer step per batch. Full fine-tuning by default.

--lora-rank R (bench/rl/run.sh's qwen05 / qwen15 sizes: 16, --lora-alpha 32): LoRA as trinity's
model.lora_configs with target_modules all-linear: every q/k/v/o/gate/up/down projection of every
layer gets y = x W^T + b + (alpha / R) (x A^T) B^T, A [R, in] Kaiming-uniform(a=sqrt(5)) (= U(+-1/sqrt(in))),
B [out, R] zero, no dropout; the base (all weights, biases, embeddings, norms) is frozen (no gradient,
no optimizer state) and AdamW holds only A and B. The training forward uses the base plus the unmerged
adapters. Generation uses merged weights W + (alpha / R) B A, held as a second fp32 copy of the seven
linears and recomputed after every optimizer step (timed as sync_s and counted in the step): the fastest
fair choice for a PyTorch loop (decoding then costs what a plain model's does; trinity's engine also
decodes from a merged fp32 copy). --ckpt: per-layer activation checkpointing
(torch.utils.checkpoint, non-reentrant) in the training forward. --share-prefill (run.sh passes it for
the LoRA sizes): each prompt is prefilled once and its KV cache copied to its samples, as trinity's
engine does; without it every sample's prompt is prefilled, as Hugging Face generate does.

Medians are over steps skip+1..N: --skip (default 2 when STEPS > 4, else 0; run.sh passes 1 for the
LoRA sizes: the first step is start-up). Prints one JSON line.
Usage: /usr/bin/python3 torch_rl.py MODEL_DIR TRAIN_JSONL STEPS THREADS [--batch 16] [--repeat 8]
       [--max-new 8] [--lora-rank 0] [--lora-alpha 32] [--ckpt] [--share-prefill] [--skip N]"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden"))
from torch_model import Model, load_dir, param_names, rmsnorm, rotate_half  # noqa: E402

IM_START, IM_END, EOT = 257, 258, 256
STOP = (EOT, IM_END)
CLIP, EPS = 0.2, 1e-6
LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def render(prompt):
    """The byte tokenizer's chat template for one user message + generation prompt (token ids)."""
    ids = [IM_START] + list(b"user\n" + prompt.encode()) + [IM_END] + list(b"\n")
    return ids + [IM_START] + list(b"assistant\n")


class Batched:
    """Qwen2/Llama decoder over [B, T] with an optional KV cache. Weights: self.w (the shared state dict,
    or with LoRA during generation a view of it whose seven linears per layer are the merged copies);
    self.lora maps a linear's weight name to its (A, B), applied unmerged while self.lora_on."""

    def __init__(self, cfg, sd, ref):
        self.cfg, self.sd, self.ref = cfg, sd, ref
        self.w = sd
        self.L = cfg["num_hidden_layers"]
        self.lora, self.scale, self.lora_on, self.ckpt = {}, 0.0, False, False

    def lin(self, x, name):
        """x W^T + b for the linear `name` (without ".weight"), plus the adapter when on."""
        y = F.linear(x, self.w[name + ".weight"], self.sd.get(name + ".bias"))
        if self.lora_on:
            a, b = self.lora[name + ".weight"]
            y = y + self.scale * F.linear(F.linear(x, a), b)
        return y

    def layer(self, i, h, cos, sin, cache=None):
        sd, r = self.sd, self.ref
        B, T, _ = h.shape
        q_ = f"model.layers.{i}."
        x = rmsnorm(h, sd[q_ + "input_layernorm.weight"], r.eps)

        def proj(n, heads):
            return self.lin(x, q_ + f"self_attn.{n}_proj").view(B, T, heads, r.HS).transpose(1, 2)  # [B, H, T, HS]

        q, k, v = proj("q", r.NH), proj("k", r.NKV), proj("v", r.NKV)
        if self.cfg["model_type"] == "qwen3":
            q = rmsnorm(q, sd[q_ + "self_attn.q_norm.weight"], r.eps)
            k = rmsnorm(k, sd[q_ + "self_attn.k_norm.weight"], r.eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            if cache[i] is not None:
                k = torch.cat((cache[i][0], k), 2)
                v = torch.cat((cache[i][1], v), 2)
            cache[i] = (k, v)
        rep = r.NH // r.NKV
        kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = (q @ kk.transpose(-1, -2)) * r.HS ** -0.5
        if T > 1:
            S = kk.shape[2]
            s = s + torch.full((T, S), float("-inf")).triu(S - T + 1)
        a = (torch.softmax(s, -1) @ vv).transpose(1, 2).reshape(B, T, r.NH * r.HS)
        h = h + self.lin(a, q_ + "self_attn.o_proj")
        x = rmsnorm(h, sd[q_ + "post_attention_layernorm.weight"], r.eps)
        g = self.lin(x, q_ + "mlp.gate_proj")
        u = self.lin(x, q_ + "mlp.up_proj")
        return h + self.lin(F.silu(g) * u, q_ + "mlp.down_proj")

    def forward(self, ids, pos0=0, cache=None):
        """ids [B, T] -> final normed hidden [B, T, C]; cache: list of (k, v) [B, NKV, S, HS] or None."""
        r = self.ref
        T = ids.shape[1]
        f = torch.arange(pos0, pos0 + T).float()[:, None] * r.inv[None]
        e = torch.cat((f, f), -1)
        cos, sin = e.cos()[None, None], e.sin()[None, None]  # [1, 1, T, HS]
        h = self.sd["model.embed_tokens.weight"][ids]
        ckpt = self.ckpt and cache is None and torch.is_grad_enabled()
        for i in range(self.L):
            if ckpt:
                h = torch.utils.checkpoint.checkpoint(self.layer, i, h, cos, sin, use_reentrant=False)
            else:
                h = self.layer(i, h, cos, sin, cache)
        return rmsnorm(h, self.sd["model.norm.weight"], r.eps)

    def logits(self, hidden):
        return F.linear(hidden, self.ref.head_weight())


def generate(m, prompts, repeat, max_new, share_prefill=False):
    """prompts: list of id lists (equal length) -> (resp [N, R] ids, lp [N, R], mask [N, R], stopped [N]).
    share_prefill: prefill each prompt once and copy its KV cache to its `repeat` samples (as trinity's
    engine forks a prompt's KV for n samples); else every sample's prompt is prefilled (as HF generate
    with num_return_sequences does)."""
    P = len(prompts[0])
    assert all(len(p) == P for p in prompts), "prompts of one batch must have equal length"
    N = len(prompts) * repeat
    cache = [None] * m.L
    toks, lps = [], []
    done = torch.zeros(N, dtype=torch.bool)
    alive = []
    with torch.no_grad():
        if share_prefill:
            logits = m.logits(m.forward(torch.tensor(prompts), 0, cache)[:, -1]).repeat_interleave(repeat, 0)
            cache = [(k.repeat_interleave(repeat, 0), v.repeat_interleave(repeat, 0)) for k, v in cache]
        else:
            ids = torch.tensor(prompts).repeat_interleave(repeat, 0)  # [N, P], `repeat` samples per prompt
            logits = m.logits(m.forward(ids, 0, cache)[:, -1])
        for t in range(max_new):
            logp = torch.log_softmax(logits, -1)  # temperature 1
            nxt = torch.multinomial(logp.exp(), 1)  # [N, 1]
            alive.append(~done)
            toks.append(nxt[:, 0])
            lps.append(logp.gather(1, nxt)[:, 0])
            done = done | (nxt[:, 0] == STOP[0]) | (nxt[:, 0] == STOP[1])
            if bool(done.all()) or t == max_new - 1:
                break
            logits = m.logits(m.forward(nxt, P + t, cache)[:, -1])
    mask = torch.stack(alive, 1)
    return torch.stack(toks, 1), torch.stack(lps, 1), mask, done


def peak_rss():
    """The process's peak resident set so far, GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 * 1024.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("data")
    ap.add_argument("steps", type=int)
    ap.add_argument("threads", type=int)
    ap.add_argument("--batch", type=int, default=16, help="tasks per step")
    ap.add_argument("--repeat", type=int, default=8, help="samples per task")
    ap.add_argument("--max-new", type=int, default=8, help="new tokens per sample at most")
    ap.add_argument("--lora-rank", type=int, default=0, help="0: full fine-tuning")
    ap.add_argument("--lora-alpha", type=float, default=32.0)
    ap.add_argument("--ckpt", action="store_true", help="per-layer activation checkpointing in training")
    ap.add_argument("--share-prefill", action="store_true", help="prefill each prompt once for its samples")
    ap.add_argument("--skip", type=int, default=None, help="leading steps left out of the medians")
    args = ap.parse_args()
    steps, threads, batch_n, repeat = args.steps, args.threads, args.batch, args.repeat
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    t_start = time.time()
    cfg, sd = load_dir(args.model_dir)
    ref = Model(cfg, sd)
    names = [n for n, _ in param_names(cfg)]
    m = Batched(cfg, sd, ref)
    m.ckpt = args.ckpt
    rows = [json.loads(line) for line in open(args.data)]

    # Check the batched model against the oracle on one chat prompt + a few tokens (one short
    # sequence: ~1 s at the 1.5B shape).
    probe = torch.tensor(render(rows[0]["prompt"]) + list(b"123") + [IM_END])
    with torch.no_grad():
        want, _ = ref.logprobs(probe)
        got = torch.log_softmax(m.logits(m.forward(probe[None]))[0, :-1], -1).gather(1, probe[1:, None])[:, 0]
    err = float((want - got).abs().max())
    assert err < 1e-4, f"batched model differs from tests/golden/torch_model.py by {err}"

    merged = None
    if args.lora_rank > 0:
        rank = args.lora_rank
        m.scale = args.lora_alpha / rank
        params = []
        for i in range(m.L):
            for lin in LINEARS:
                w = sd[f"model.layers.{i}.{lin}.weight"]
                a = torch.empty(rank, w.shape[1])
                torch.nn.init.kaiming_uniform_(a, a=math.sqrt(5))  # PEFT's default: U(+-1/sqrt(in))
                a.requires_grad_(True)
                b = torch.zeros(w.shape[0], rank, requires_grad=True)
                m.lora[f"model.layers.{i}.{lin}.weight"] = (a, b)
                params += [a, b]
        # The generation weights: the state dict with each adapted linear replaced by W + scale * B A.
        merged = dict(sd)
        for n in m.lora:
            merged[n] = torch.empty_like(sd[n])

        def merge():
            with torch.no_grad():
                for n, (a, b) in m.lora.items():
                    torch.addmm(sd[n], b, a, alpha=m.scale, out=merged[n])

        merge()
    else:
        params = [sd[n] for n in names]
        for p in params:
            p.requires_grad_(True)
    trainable = sum(p.numel() for p in params)
    total = sum(sd[n].numel() for n in names)

    opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.999), weight_decay=0.01)
    start_s = time.time() - t_start
    start_rss = peak_rss()
    per = []
    cursor = 0
    for step in range(steps):
        t0 = time.time()
        batch = [rows[(cursor + i) % len(rows)] for i in range(batch_n)]
        cursor += batch_n
        prompts = [render(r["prompt"]) for r in batch]
        if merged is not None:
            m.w, m.lora_on = merged, False
        resp, old_lp, mask, stopped = generate(m, prompts, repeat, args.max_new, args.share_prefill)
        if merged is not None:
            m.w, m.lora_on = sd, True
        t1 = time.time()
        # reward: exact sum, then a stop token
        rewards = []
        for i in range(resp.shape[0]):
            n = int(mask[i].sum())
            body = [int(x) for x in resp[i, :n] if int(x) < 256]
            text = bytes(body).decode("utf-8", "replace").strip()
            rewards.append(1.0 if bool(stopped[i]) and text == batch[i // repeat]["answer"] else 0.0)
        r = torch.tensor(rewards).view(batch_n, repeat)
        adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + EPS)).view(-1)  # unbiased std
        t2 = time.time()
        # train: one forward/backward over [N, P + R], loss on the response tokens
        P = len(prompts[0])
        full = torch.cat((torch.tensor(prompts).repeat_interleave(repeat, 0), resp * mask), 1)  # pad id 0
        opt.zero_grad()
        h = m.forward(full)[:, P - 1:-1]  # hidden states that predict the response tokens
        logp_all = torch.log_softmax(m.logits(h), -1)  # [N, R, V]
        lp = logp_all.gather(2, resp[:, :, None])[:, :, 0]
        with torch.no_grad():
            entropy = -(logp_all.exp() * logp_all).sum(-1)
        ratio = torch.exp(lp - old_lp)
        a = adv[:, None]
        pg = torch.maximum(-a * ratio, -a * ratio.clamp(1 - CLIP, 1 + CLIP))
        fm = mask.float()
        loss = (pg * fm).sum() / fm.sum().clamp(min=1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        t3 = time.time()
        if merged is not None:
            merge()  # the next step's generation weights
        t4 = time.time()
        per.append({"step": t4 - t0, "generate": t1 - t0, "reward": t2 - t1, "train": t3 - t2, "sync": t4 - t3,
                    "reward_mean": sum(rewards) / len(rewards), "resp_len": float(fm.sum()) / len(rewards),
                    "entropy": float((entropy * fm).sum() / fm.sum())})
        if args.lora_rank > 0:  # slow steps: show progress
            print(f"pytorch step {step + 1}: {t4 - t0:.2f} s (generate {t1 - t0:.2f}, train {t3 - t2:.2f}, "
                  f"sync {t4 - t3:.2f}), peak RSS {peak_rss():.2f} GiB", file=sys.stderr, flush=True)
    wall = time.time() - t_start
    skip = args.skip if args.skip is not None else (2 if len(per) > 4 else 0)
    warm = per[skip:] if len(per) > skip else per

    def med(k):
        v = sorted(x[k] for x in warm)
        return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])

    rss = peak_rss()
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": threads,
                      "params": total, "trainable": trainable, "lora_rank": args.lora_rank,
                      "ckpt": args.ckpt, "share_prefill": args.share_prefill, "tasks": batch_n, "repeat": repeat,
                      "max_new": args.max_new, "steps": steps, "skip": skip,
                      "step_s": round(med("step"), 4), "generate_s": round(med("generate"), 4),
                      "train_s": round(med("train"), 4), "reward_s": round(med("reward"), 5),
                      "sync_s": round(med("sync"), 4), "first_step_s": round(per[0]["step"], 3),
                      "start_s": round(start_s, 2), "wall_s": round(wall, 2), "oracle_err": err,
                      "reward_mean": round(sum(x["reward_mean"] for x in per) / len(per), 4),
                      "resp_len": round(sum(x["resp_len"] for x in per) / len(per), 3),
                      "start_rss_gib": round(start_rss, 2), "peak_rss_gib": round(rss, 2)}))


if __name__ == "__main__":
    main()
