"""PyTorch baseline for bench/rl: the GRPO loop of `trinity run` on the arithmetic task, on the same
checkpoint (weights read by tests/golden/torch_model.py, whose per-sequence model checks this batched
one at start-up). Per step: 16 prompts rendered with the byte tokenizer's chat template, 8 samples
each (128 sequences, batched, KV cache, temperature 1, stop at ids 256/258, <= 8 new tokens), reward
1 iff stopped and the text is the exact sum, GRPO advantages a = (r - mean_g) / (std_g + 1e-6)
(unbiased std), PPO-clip (0.2) token-mean loss with old logprobs = sampling logprobs, AdamW (lr 3e-4,
betas 0.9/0.999, wd 0.01), grad clip 1.0, one optimizer step per batch. Prints one JSON line.
Usage: /usr/bin/python3 torch_rl.py MODEL_DIR TRAIN_JSONL STEPS THREADS"""
import json
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden"))
from torch_model import Model, load_dir, param_names, rmsnorm, rotate_half  # noqa: E402

IM_START, IM_END, EOT = 257, 258, 256
STOP = (EOT, IM_END)
BATCH, REPEAT, MAX_NEW, CLIP, EPS = 16, 8, 8, 0.2, 1e-6


def render(prompt):
    """The byte tokenizer's chat template for one user message + generation prompt (token ids)."""
    ids = [IM_START] + list(b"user\n" + prompt.encode()) + [IM_END] + list(b"\n")
    return ids + [IM_START] + list(b"assistant\n")


class Batched:
    """Qwen2/Llama decoder over [B, T] with an optional KV cache; weights = the shared state dict."""

    def __init__(self, cfg, sd, ref):
        self.cfg, self.sd, self.ref = cfg, sd, ref
        self.L = cfg["num_hidden_layers"]

    def forward(self, ids, pos0=0, cache=None):
        """ids [B, T] -> final normed hidden [B, T, C]; cache: list of (k, v) [B, NKV, S, HS] or None."""
        sd, r, p = self.sd, self.ref, "model.layers."
        B, T = ids.shape
        f = torch.arange(pos0, pos0 + T).float()[:, None] * r.inv[None]
        e = torch.cat((f, f), -1)
        cos, sin = e.cos()[None, None], e.sin()[None, None]  # [1, 1, T, HS]
        h = sd["model.embed_tokens.weight"][ids]
        for i in range(self.L):
            q_ = f"{p}{i}."
            x = rmsnorm(h, sd[q_ + "input_layernorm.weight"], r.eps)

            def proj(n, heads):
                y = F.linear(x, sd[q_ + f"self_attn.{n}_proj.weight"], sd.get(q_ + f"self_attn.{n}_proj.bias"))
                return y.view(B, T, heads, r.HS).transpose(1, 2)  # [B, H, T, HS]

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
            h = h + F.linear(a, sd[q_ + "self_attn.o_proj.weight"], sd.get(q_ + "self_attn.o_proj.bias"))
            x = rmsnorm(h, sd[q_ + "post_attention_layernorm.weight"], r.eps)
            g = F.linear(x, sd[q_ + "mlp.gate_proj.weight"])
            u = F.linear(x, sd[q_ + "mlp.up_proj.weight"])
            h = h + F.linear(F.silu(g) * u, sd[q_ + "mlp.down_proj.weight"])
        return rmsnorm(h, sd["model.norm.weight"], r.eps)

    def logits(self, hidden):
        return F.linear(hidden, self.ref.head_weight())


def generate(m, prompts):
    """prompts: list of id lists (equal length) -> (resp [N, R] ids, lp [N, R], mask [N, R], stopped [N])."""
    P = len(prompts[0])
    assert all(len(p) == P for p in prompts), "prompts of one batch must have equal length"
    ids = torch.tensor(prompts).repeat_interleave(REPEAT, 0)  # [N, P], 8 samples per prompt
    N = ids.shape[0]
    cache = [None] * m.L
    toks, lps = [], []
    done = torch.zeros(N, dtype=torch.bool)
    alive = []
    with torch.no_grad():
        logits = m.logits(m.forward(ids, 0, cache)[:, -1])
        for t in range(MAX_NEW):
            logp = torch.log_softmax(logits, -1)  # temperature 1
            nxt = torch.multinomial(logp.exp(), 1)  # [N, 1]
            alive.append(~done)
            toks.append(nxt[:, 0])
            lps.append(logp.gather(1, nxt)[:, 0])
            done = done | (nxt[:, 0] == STOP[0]) | (nxt[:, 0] == STOP[1])
            if bool(done.all()) or t == MAX_NEW - 1:
                break
            logits = m.logits(m.forward(nxt, P + t, cache)[:, -1])
    mask = torch.stack(alive, 1)
    return torch.stack(toks, 1), torch.stack(lps, 1), mask, done


def main():
    model_dir, data, steps, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    t_start = time.time()
    cfg, sd = load_dir(model_dir)
    ref = Model(cfg, sd)
    params = [sd[n] for n, _ in param_names(cfg)]
    for p in params:
        p.requires_grad_(True)
    m = Batched(cfg, sd, ref)
    rows = [json.loads(line) for line in open(data)]

    # Check the batched model against the oracle on one chat prompt + a few tokens.
    probe = torch.tensor(render(rows[0]["prompt"]) + list(b"123") + [IM_END])
    with torch.no_grad():
        want, _ = ref.logprobs(probe)
        got = torch.log_softmax(m.logits(m.forward(probe[None]))[0, :-1], -1).gather(1, probe[1:, None])[:, 0]
    err = float((want - got).abs().max())
    assert err < 1e-4, f"batched model differs from tests/golden/torch_model.py by {err}"

    opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.999), weight_decay=0.01)
    per = []
    cursor = 0
    for step in range(steps):
        t0 = time.time()
        batch = [rows[(cursor + i) % len(rows)] for i in range(BATCH)]
        cursor += BATCH
        prompts = [render(r["prompt"]) for r in batch]
        resp, old_lp, mask, stopped = generate(m, prompts)
        t1 = time.time()
        # reward: exact sum, then a stop token
        rewards = []
        for i in range(resp.shape[0]):
            n = int(mask[i].sum())
            body = [int(x) for x in resp[i, :n] if int(x) < 256]
            text = bytes(body).decode("utf-8", "replace").strip()
            rewards.append(1.0 if bool(stopped[i]) and text == batch[i // REPEAT]["answer"] else 0.0)
        r = torch.tensor(rewards).view(BATCH, REPEAT)
        adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + EPS)).view(-1)  # unbiased std
        t2 = time.time()
        # train: one forward/backward over [128, P + R], loss on the response tokens
        P = len(prompts[0])
        full = torch.cat((torch.tensor(prompts).repeat_interleave(REPEAT, 0), resp * mask), 1)  # pad id 0
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
        per.append({"step": t3 - t0, "generate": t1 - t0, "reward": t2 - t1, "train": t3 - t2,
                    "reward_mean": sum(rewards) / len(rewards), "resp_len": float(fm.sum()) / len(rewards),
                    "entropy": float((entropy * fm).sum() / fm.sum())})
    wall = time.time() - t_start
    warm = per[2:] if len(per) > 4 else per

    def med(k):
        v = sorted(x[k] for x in warm)
        return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 * 1024.0)
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": threads,
                      "params": sum(p.numel() for p in params), "steps": steps,
                      "step_s": round(med("step"), 4), "generate_s": round(med("generate"), 4),
                      "train_s": round(med("train"), 4), "reward_s": round(med("reward"), 5),
                      "wall_s": round(wall, 2), "oracle_err": err,
                      "reward_mean": round(sum(x["reward_mean"] for x in per) / len(per), 4),
                      "resp_len": round(sum(x["resp_len"] for x in per) / len(per), 3),
                      "peak_rss_gib": round(rss, 2)}))


if __name__ == "__main__":
    main()
