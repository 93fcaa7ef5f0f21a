#!/usr/bin/python3
"""Independent PyTorch check of `trinity debug loss` (ctest algorithm_torch_golden, label golden).

For a deterministic set of cases (every policy loss, KL function, entropy mode, aggregation mode and
the group/token advantage functions), writes IN.json, runs the trinity binary, and recomputes the
loss, the advantages and d(loss)/d(current logprobs), d(loss)/d(entropy) with torch autograd in
float64 from the formulas of docs/algorithms.md (written here from the formulas, not from the C++).
Exits non-zero on any mismatch; exits 77 (skipped) when torch is not importable.
Run with Debian's interpreter: /usr/bin/python3 torch_oracle.py --trinity build/trinity --work DIR
"""
import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys

try:
    import torch
except Exception as e:  # pragma: no cover
    print(f"torch not available ({e}); skipping", file=sys.stderr)
    sys.exit(77)

torch.set_default_dtype(torch.float64)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


# ---------------------------------------------------------------- reference math (float64, autograd)

def pad(rows, T, fill=0.0):
    return torch.tensor([list(r) + [fill] * (T - len(r)) for r in rows])


class Norm:
    def __init__(self, m, expert):
        rows_with = (m.sum(-1) > 0)
        self.m, self.expert = m, expert
        self.rows = m.shape[0]
        idx = torch.arange(m.shape[1]).expand_as(m)
        self.max_len = float(((idx + 1) * (m > 0)).max()) if m.numel() else 0.0
        self.rows_with = rows_with

    def subset(self, which):
        if which == "all":
            return torch.ones(self.rows, dtype=torch.bool)
        return self.expert if which == "expert" else ~self.expert


def agg(v, norm, mode, which="all"):
    m = norm.m * norm.subset(which).unsqueeze(-1)
    ntok = m.sum()
    nseq = ((m.sum(-1) > 0)).sum()
    if mode == "token-mean":
        return (v * m).sum() / ntok if ntok > 0 else (v * 0).sum()
    if nseq == 0:
        return (v * 0).sum()
    if mode == "seq-mean-token-sum":
        return (v * m).sum() / nseq
    if mode == "seq-mean-token-mean":
        n = m.sum(-1)
        per = torch.where(n > 0, (v * m).sum(-1) / torch.clamp(n, min=1), torch.zeros_like(n))
        return per.sum() / nseq
    if mode == "seq-mean-token-sum-norm":
        return (v * m).sum() / (nseq * norm.max_len)
    raise ValueError(mode)


def ppo_terms(lp, old, A, lo, hi, c=3.0, fallback=False):
    lr = torch.clamp(lp - old, -20, 20)
    if fallback:
        lr = lp - lp.detach()
    r = torch.exp(lr)
    l1, l2 = -A * r, -A * torch.clamp(r, 1 - lo, 1 + hi)
    lc = torch.maximum(l1, l2)
    return torch.where(A < 0, torch.minimum(lc, -A * c), lc)


def policy_loss(name, a, lp, old, ref, A, norm, step, agg_default):
    mode = a.get("loss_agg_mode", agg_default)
    m = norm.m
    if name == "ppo":
        cr = a.get("clip_range", 0.2)
        lo, hi = a.get("clip_range_low", cr), a.get("clip_range_high", cr)
        pg = ppo_terms(lp, old, A, lo, hi, a.get("clip_ratio_c", 3.0), a.get("fallback_to_policy_gradient", False))
        if a.get("enable_sequence_masking", False):
            lr = torch.clamp(lp - old, -20, 20).detach()
            seq_kl = (-lr * m).sum(-1) / (m.sum(-1) + 1e-8)
            drop = (A < 0) & (seq_kl > a.get("delta_sequence_masking", 0.1)).unsqueeze(-1)
            pg = torch.where(drop, torch.zeros_like(pg), pg)
        return agg(pg, norm, mode)
    if name == "gspo":
        lo, hi = a.get("clip_range_low", 3e-4), a.get("clip_range_high", 4e-4)
        mode = a.get("loss_agg_mode", "seq-mean-token-mean")
        seq = ((lp - old) * m).sum(-1) / (m.sum(-1) + 1e-8)
        tl = lp - lp.detach() + seq.detach().unsqueeze(-1)
        rho = torch.exp(tl)
        return agg(torch.maximum(-A * rho, -A * torch.clamp(rho, 1 - lo, 1 + hi)), norm, mode)
    if name == "cispo":
        lo, hi = a.get("clip_range_low", 1.0), a.get("clip_range_high", 0.28)
        r = torch.exp(lp - old)
        M = torch.ones_like(r)
        if a.get("enable_mask_clip", False):
            mlo, mhi = a.get("mask_clip_range_low", 1.0), a.get("mask_clip_range_high", 0.28)
            M = (~(((r > 1 + mhi) & (A > 0)) | ((r < 1 - mlo) & (A < 0)))).double()
        return agg(-A * torch.clamp(r, 1 - lo, 1 + hi).detach() * M.detach() * lp, norm, mode)
    if name == "sapo":
        tp, tn = a.get("tau_pos", 1.0), a.get("tau_neg", 1.05)
        tau = torch.where(A > 0, torch.full_like(A, tp), torch.full_like(A, tn))
        f = torch.sigmoid(tau * (torch.exp(lp - old) - 1)) * 4 / tau
        return agg(-A * f.detach() * lp, norm, mode)
    if name == "topr":
        thr = a.get("advantage_threshold", 0.0)
        alpha = torch.where(A > thr, torch.ones_like(A), torch.clamp(torch.exp(lp - old), 0, 1)).detach()
        return agg(-alpha * A * lp, norm, mode)
    if name == "opmd":
        return agg(-A * lp, norm, mode) / (1 + a.get("tau", 1.0))
    if name == "sppo":
        eps = a.get("epsilon", 0.3)
        r = torch.exp(lp - old).detach()
        inr = ((r >= 1 / (1 + eps)) & (r <= 1 + eps)).double()
        return agg(-A * (lp - old) * inr, norm, mode)
    if name == "importance_sampling":
        return agg(-A * torch.exp(torch.clamp(lp - old, -20, 20)), norm, mode)
    if name == "m2po":
        # M2PO (arXiv 2510.01161): over the whole mini-batch, trust tokens are where PPO would clip
        # (A > 0, lr > 0 or A < 0, lr < 0); drop the largest lr² until their mean is <= m2_threshold.
        thr, clip = a.get("m2_threshold", 0.04), a.get("log_ratio_clip", 20.0)
        lr = (lp - old).detach()
        trust = (m > 0) & (((A > 0) & (lr > 0)) | ((A < 0) & (lr < 0)))
        keep = torch.ones_like(m, dtype=torch.bool)
        idx = trust.reshape(-1).nonzero().squeeze(-1)
        m2 = (lr * lr).reshape(-1)[idx]
        if len(idx) and float(m2.mean()) > thr:
            vals, order = torch.sort(m2, stable=True)
            means = torch.cumsum(vals, 0) / torch.arange(1, len(vals) + 1)
            n_keep = int((means <= thr).sum())
            keep.reshape(-1)[idx[order[n_keep:]]] = False
        lrs = (lp - old) + (torch.clamp(lp - old, -clip, clip) - (lp - old)).detach()
        return agg(torch.where(keep, -A * torch.exp(lrs), torch.zeros_like(lp)), norm, "token-mean")
    if name == "rec":
        el, eh = a.get("epsilon_low", 0.2), a.get("epsilon_high", 0.2)
        elp, ehp = a.get("epsilon_low_prime", 0.6), a.get("epsilon_high_prime", 2.0)
        cm, w, reg = a.get("clip_mode", "none"), a.get("weight", "none"), a.get("regularizer", "none")
        coef, temp = a.get("regularizer_coef", 0.0), a.get("temp", 1.0)
        r = torch.exp(lp - old).detach()
        seqr = torch.exp(((lp - old) * m).sum(-1) / (m.sum(-1) + 1e-8)).detach().unsqueeze(-1).expand_as(r)
        rr = seqr if cm == "gspo-one-side" else r
        two = (rr >= 1 - el) & (rr <= 1 + eh)
        if cm == "none":
            I = torch.ones_like(r, dtype=torch.bool)
        elif cm == "two-side":
            I = two
        elif cm == "ring":
            I = two | ((A >= 0) & (rr <= 1 - elp)) | ((A <= 0) & (rr >= 1 + ehp))
        else:
            I = ((rr <= 1 + eh) & (A >= 0)) | ((rr >= 1 - el) & (A <= 0))
        Aw = A
        if w == "importance_sampling":
            Aw = A * r
        elif w == "gspo_importance_sampling":
            Aw = A * seqr
        elif w == "advantage":
            Aw = A * torch.exp(A / temp)
        L = -Aw * lp * I.double()
        if reg == "forward-kl":
            L = L - coef * lp
        elif reg == "k2":
            L = L + coef * (lp - old) ** 2
        return agg(L, norm, "seq-mean-token-mean" if cm == "gspo-one-side" else "token-mean")
    if name in ("sft", "sft_is", "sft_phi"):
        return agg(sft_term(name, a, lp), norm, mode)
    if name == "dpo":
        beta, ls = a.get("beta", 0.1), a.get("label_smoothing", 0.0)
        s = ((lp - ref) * m).sum(-1)
        z = beta * (s[0::2] - s[1::2])
        L = -(1 - ls) * torch.nn.functional.logsigmoid(z) - ls * torch.nn.functional.logsigmoid(-z)
        return L.sum() / (norm.rows / 2)
    if name in ("mix", "mix_chord"):
        if name == "mix":
            mu = a.get("mu", 0.1)
            sft_name = "sft"
        else:
            W, D = a.get("mu_warmup_steps", 0), a.get("mu_decay_steps", 0)
            peak, valley = a.get("mu_peak", 0.1), a.get("mu_valley", 0.1)
            if step < W:
                mu = step / W * peak
            elif step >= W + D:
                mu = valley
            else:
                mu = (peak - valley) * 0.5 * (1 + math.cos(math.pi * (step - W) / D)) + valley
            sft_name = "sft_phi" if a.get("enable_phi_function", True) else "sft"
        cr = a.get("clip_range", 0.2)
        lo, hi = a.get("clip_range_low", cr), a.get("clip_range_high", cr)
        gmode = a.get("grpo_loss_agg_mode", mode)
        smode = a.get("sft_loss_agg_mode", mode)
        usual = agg(ppo_terms(lp, old, A, lo, hi), norm, gmode, "usual")
        expert = agg(sft_term(sft_name, {}, lp), norm, smode, "expert")
        return (1 - mu) * usual + mu * expert
    raise ValueError(name)


def sft_term(name, a, lp):
    if name == "sft":
        return -lp
    p = torch.exp(lp)
    if name == "sft_is":
        return -lp * p.detach()
    cut = a.get("cutoff_prob", 1.0)
    lpc = torch.clamp(lp, max=math.log(cut)) if cut < 1 else lp
    return -lpc * (p * (1 - p)).detach()


def kl_value(name, lp, ref, old):
    x = ref - lp
    if name == "k1":
        return lp - ref
    if name == "k2":
        return 0.5 * (lp - ref) ** 2
    if name == "k3":
        return torch.exp(x) - x - 1
    if name == "low_var_kl":
        xc = torch.clamp(x, -20, 20)
        return torch.clamp(torch.exp(xc) - xc - 1, -10, 10)
    if name == "abs":
        return torch.abs(lp - ref)
    if name == "corrected_k3":
        return torch.clamp(torch.exp(lp - old), 0, 2) * (torch.exp(x) - x - 1)
    raise ValueError(name)


def grpo_adv(rewards, groups, eps=1e-6):
    out = [0.0] * len(rewards)
    for g in dict.fromkeys(groups):
        idx = [i for i, x in enumerate(groups) if x == g]
        r = torch.tensor([rewards[i] for i in idx])
        mu, sd = (0.0, 1.0) if len(idx) == 1 else (r.mean(), r.std())
        for k, i in enumerate(idx):
            out[i] = float((r[k] - mu) / (sd + eps))
    return out


def simple_adv(kind, rewards, groups, a):
    out = [0.0] * len(rewards)
    for g in dict.fromkeys(groups):
        idx = [i for i, x in enumerate(groups) if x == g]
        r = torch.tensor([rewards[i] for i in idx])
        n = len(idx)
        if kind == "reinforce":
            v = r
        elif kind == "rloo":
            v = r if n == 1 else n / (n - 1) * (r - r.mean())
        elif kind == "opmd":
            if n == 1:
                v = r
            elif a.get("opmd_baseline", "mean") == "mean":
                v = r - r.mean()
            else:
                tau = a.get("tau", 1.0)
                v = r - tau * (torch.logsumexp(r / tau, 0) - math.log(n))
        elif kind == "asymre":
            v = r if n == 1 else r - (r.mean() + a.get("baseline_shift", -0.1))
        for k, i in enumerate(idx):
            out[i] = float(v[k])
    return out


def entropy_clip(kind, a, A, m, old, H, nec):
    """Clip_B / Clip_V (arXiv 2602.03392): the action mask after dropping tokens."""
    S = torch.exp(old) * (H + old)
    x = S if kind == "clipb" else nec - S
    n = max(float(m.sum()), 1.0)
    mean = (x * m).sum() / n
    sd = float(torch.sqrt(((x - mean) ** 2 * m).sum() / n))
    if sd < 1e-12:
        return m
    if kind == "clipb":
        drop = (A < 0) & (x - mean < -a.get("mu", 2.5) * sd)
        return m * (~drop).double()
    mu, max_frac = a.get("mu", 8.5), a.get("max_frac", 1e-4)
    over = x > mu * sd
    drop = (A <= 0) & over
    if float(((m > 0) & drop).sum()) / n > max_frac:
        k = max(int(max_frac * n), 1)
        neg = ((A < 0) & (m > 0) & over).reshape(-1).nonzero().squeeze(-1).tolist()
        if len(neg) > k:
            flat = x.reshape(-1)
            neg.sort(key=lambda i: (-float(flat[i]), i))
            drop = ((A == 0) & over).reshape(-1).clone()
            for i in neg[:k]:
                drop[i] = True
            drop = drop.reshape(m.shape)
    return m * (~drop).double()


def whiten(x, m):
    mu = (x * m).sum() / m.sum()
    var = (((x - mu) * m) ** 2).sum() / (m.sum() - 1)
    return (x - mu) * torch.rsqrt(var + 1e-8) * m


def oracle(inp):
    alg = inp["algorithm"]
    exps = inp["experiences"]
    B = len(exps)
    lens = [len(e["logprobs"]) for e in exps]
    T = max(lens)
    m = pad([e.get("action_mask", [1] * l) for e, l in zip(exps, lens)], T)
    old = pad([e["logprobs"] for e in exps], T)
    ref = pad([e.get("ref_logprobs", [0] * l) for e, l in zip(exps, lens)], T)
    expert = torch.tensor([bool(e.get("is_expert", False)) for e in exps])
    rewards = [e.get("reward", 0.0) for e in exps]
    groups = [e.get("group", f"#{i}") for i, e in enumerate(exps)]
    t = alg["algorithm_type"]
    adv_name = alg.get("advantage_fn", PRESET_ADV[t])
    aa = dict(PRESET_ADV_ARGS.get(t, {}))
    aa.update(alg.get("advantage_fn_args", {}))
    # DataProto-style scores: the sum of the token rewards if given, else the reward (at the last token).
    clipped = None
    scores = [sum(e["token_rewards"]) if "token_rewards" in e else rewards[i] for i, e in enumerate(exps)]
    if "advantages" in exps[0]:
        A = pad([e["advantages"] for e in exps], T)
    elif adv_name == "grpo":
        A = torch.tensor(grpo_adv(rewards, groups)).unsqueeze(-1) * m
    elif adv_name in ("grpo_verl", "clipb", "clipv"):
        A = torch.tensor(grpo_adv(scores, groups, aa.get("epsilon", 1e-6))).unsqueeze(-1) * m
        if adv_name != "grpo_verl":
            H = pad(inp["entropy"], T)
            nec = pad([e.get("nec", [0] * l) for e, l in zip(exps, lens)], T)
            clipped = entropy_clip(adv_name, aa, A, m, old, H, nec)  # the loss trains these tokens
    elif adv_name in ("opmd_verl", "asymre_verl"):
        A = torch.tensor(simple_adv(adv_name[:-5], scores, groups, aa)).unsqueeze(-1) * m
    elif adv_name == "remax":
        r = torch.zeros(B, T)
        for b, e in enumerate(exps):
            if "token_rewards" in e:
                r[b, :lens[b]] = torch.tensor(e["token_rewards"])
            else:
                r[b, lens[b] - 1] = rewards[b]
        ret = torch.flip(torch.cumsum(torch.flip(r * m, [-1]), -1), [-1])
        A = ret - torch.tensor([e["reward_baseline"] for e in exps]).unsqueeze(-1) * m
    elif adv_name in ("reinforce", "rloo", "opmd", "asymre"):
        A = torch.tensor(simple_adv(adv_name, rewards, groups, aa)).unsqueeze(-1) * m
    elif adv_name in ("ppo", "reinforceplusplus"):
        gamma, lam = aa.get("gamma", 1.0), aa.get("lam", 1.0)
        vals = pad([e.get("values", [0] * l) for e, l in zip(exps, lens)], T)
        A = torch.zeros(B, T)
        for b in range(B):
            nv = na = 0.0
            for tt in reversed(range(lens[b])):
                rw = rewards[b] if tt == lens[b] - 1 else 0.0
                if adv_name == "ppo":
                    delta = rw + gamma * nv - float(vals[b, tt])
                    na = delta + gamma * lam * na
                    nv = float(vals[b, tt])
                else:
                    na = rw + gamma * na
                A[b, tt] = na
        A = whiten(A, m)
    elif adv_name == "":
        A = torch.zeros(B, T)
    else:
        raise ValueError(adv_name)
    A = A * m
    if clipped is not None:
        m = clipped
    lp = pad(inp["current_logprobs"], T).requires_grad_(True)
    H = pad(inp["entropy"], T).requires_grad_(True) if "entropy" in inp else None
    norm = Norm(m, expert)
    if inp.get("max_response_tokens", 0) > 0:  # Dr. GRPO: a constant L in seq-mean-token-sum-norm
        norm.max_len = float(inp["max_response_tokens"])
    agg_mode = alg.get("loss_agg_mode", "token-mean")
    pl_name = alg.get("policy_loss_fn", PRESET_PL[t])
    pa = dict(PRESET_PL_ARGS.get(t, {}))
    if "loss_agg_mode" in alg:
        pa["loss_agg_mode"] = alg["loss_agg_mode"]
    pa.update(alg.get("policy_loss_fn_args", {}))
    step = inp.get("train_step", 0)
    loss = policy_loss(pl_name, pa, lp, old, ref, A, norm, step, "token-mean")
    kl_name = alg.get("kl_loss_fn", PRESET_KL.get(t, "k2"))
    if kl_name != "none":
        coef = alg.get("kl_loss_fn_args", {}).get("kl_coef", 0.001)
        loss = loss + coef * agg(kl_value(kl_name, lp, ref, old), norm, agg_mode)
    ent_name = alg.get("entropy_loss_fn", PRESET_ENT.get(t, "default"))
    ent_coef = alg.get("entropy_loss_fn_args", {}).get("entropy_coef", 0.0)
    if ent_name != "none" and H is not None:
        loss = loss - ent_coef * agg(H, norm, agg_mode, "usual" if ent_name == "mix" else "all")
    grads = torch.autograd.grad(loss, [lp] + ([H] if H is not None else []), allow_unused=True)
    dlp = grads[0] if grads[0] is not None else torch.zeros(B, T)
    dH = grads[1] if H is not None and grads[1] is not None else torch.zeros(B, T)
    unpad = lambda x: [x[b, :lens[b]].tolist() for b in range(B)]
    return {"loss": float(loss), "advantages": unpad(A), "dlogprob": unpad(dlp), "dentropy": unpad(dH),
            "action_mask": unpad(m)}


PRESET_ADV = {"ppo": "ppo", "grpo": "grpo", "reinforceplusplus": "reinforceplusplus", "rloo": "rloo", "opmd": "opmd",
              "asymre": "asymre", "sppo": "opmd", "topr": "reinforce", "cispo": "grpo", "gspo": "grpo", "sapo": "grpo",
              "mix": "grpo", "mix_chord": "grpo", "sft": "", "dpo": "", "rec": "rec", "grpo_verl": "grpo_verl",
              "m2po": "grpo"}
PRESET_PL = {"ppo": "ppo", "grpo": "ppo", "grpo_verl": "ppo", "m2po": "m2po", "reinforceplusplus": "ppo", "rloo": "ppo", "opmd": "opmd",
             "asymre": "opmd", "sppo": "sppo", "topr": "topr", "cispo": "cispo", "gspo": "gspo", "sapo": "sapo",
             "mix": "mix", "mix_chord": "mix_chord", "sft": "sft", "dpo": "dpo", "rec": "rec"}
PRESET_KL = {"asymre": "none", "sppo": "none", "sft": "none", "m2po": "none"}
PRESET_ENT = {"asymre": "none", "sppo": "none", "sft": "none", "mix": "mix", "mix_chord": "mix", "m2po": "none"}
PRESET_ADV_ARGS = {}
PRESET_PL_ARGS = {}

# ---------------------------------------------------------------- cases


def make_case(rng, alg, B=6, T=6, given_adv=True, experts=False, values=False, pairs=False):
    bands = [(0.5, 0.74), (0.86, 0.97), (1.03, 1.15), (1.22, 1.26), (1.33, 1.6), (3.3, 4.0)]
    exps, cur, ent = [], [], []
    for b in range(B):
        L = rng.randint(1, T)
        old = [f32(-0.2 - 2.5 * rng.random()) for _ in range(L)]
        c = []
        for o in old:
            lo, hi = rng.choice(bands)
            x = o + math.log(lo + (hi - lo) * rng.random())
            c.append(f32(min(x, -0.05 - 0.1 * rng.random())))
        e = {"group": f"g{b // 3}", "reward": f32(rng.choice([0.0, 1.0, 0.5, rng.random()])), "logprobs": old,
             "ref_logprobs": [f32(x + (rng.random() - 0.5) * 1.5) for x in c],
             "action_mask": [1 if (t != 1 or L <= 2) else 0 for t in range(L)]}
        if b == 2 and B >= 4:
            e["action_mask"] = [0] * L
        if given_adv:
            a = f32((rng.random() - 0.5) * 3)
            e["advantages"] = [a * mm for mm in e["action_mask"]]
        if experts:
            e["is_expert"] = (b % 3 == 1)
        if values:
            e["values"] = [f32(rng.random()) for _ in range(L)]
        exps.append(e)
        cur.append(c)
        ent.append([f32(0.1 + 2 * rng.random()) for _ in range(L)])
    if pairs:
        for b in range(0, B, 2):
            exps[b]["chosen"], exps[b + 1]["chosen"] = True, False
    return {"algorithm": alg, "experiences": exps, "current_logprobs": cur, "entropy": ent}


def cases():
    rng = random.Random(20260501)
    out = []
    modes = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
    kls = ["k1", "k2", "k3", "low_var_kl", "abs", "corrected_k3"]
    pl_cases = [
        ("grpo", {}), ("grpo", {"policy_loss_fn_args": {"clip_range_low": 0.1, "clip_range_high": 0.28}}),
        ("grpo", {"policy_loss_fn_args": {"enable_sequence_masking": True, "delta_sequence_masking": 0.05}}),
        ("grpo", {"policy_loss_fn_args": {"fallback_to_policy_gradient": True}}),
        ("gspo", {}), ("gspo", {"policy_loss_fn_args": {"clip_range_low": 0.3, "clip_range_high": 0.5}}),
        ("cispo", {}), ("cispo", {"policy_loss_fn_args": {"enable_mask_clip": True}}),
        ("sapo", {}), ("topr", {}), ("opmd", {"policy_loss_fn_args": {"tau": 0.5}}), ("sppo", {}),
        ("rec", {"policy_loss_fn_args": {"clip_mode": "one-side", "weight": "importance_sampling"}}),
        ("rec", {"policy_loss_fn_args": {"clip_mode": "two-side", "regularizer": "k2", "regularizer_coef": 0.1}}),
        ("rec", {"policy_loss_fn_args": {"clip_mode": "ring", "weight": "advantage", "regularizer": "forward-kl",
                                         "regularizer_coef": 0.05}}),
        ("rec", {"policy_loss_fn_args": {"clip_mode": "gspo-one-side", "weight": "gspo_importance_sampling"}}),
        ("grpo", {"policy_loss_fn": "importance_sampling"}),
        ("sft", {}), ("sft", {"policy_loss_fn": "sft_is"}),
        ("sft", {"policy_loss_fn": "sft_phi", "policy_loss_fn_args": {"cutoff_prob": 0.5}}),
    ]
    for i, (t, extra) in enumerate(pl_cases):
        alg = {"algorithm_type": t, "loss_agg_mode": modes[i % 4], "kl_loss_fn": kls[i % 6],
               "kl_loss_fn_args": {"kl_coef": 0.05}, "entropy_loss_fn_args": {"entropy_coef": 0.01}}
        if t in ("sft",):
            alg.pop("entropy_loss_fn_args")
        alg.update(extra)
        out.append((f"{t}-{i}", make_case(rng, alg)))
    # dpo (pairs), mix and mix_chord (expert rows), advantage-computing presets
    out.append(("dpo", make_case(rng, {"algorithm_type": "dpo", "policy_loss_fn_args": {"beta": 0.3, "label_smoothing": 0.1},
                                       "kl_loss_fn": "k1", "kl_loss_fn_args": {"kl_coef": 0.1}}, pairs=True)))
    for i, t in enumerate(["mix", "mix_chord"]):
        alg = {"algorithm_type": t, "entropy_loss_fn_args": {"entropy_coef": 0.02}, "loss_agg_mode": modes[i + 1]}
        if t == "mix_chord":
            alg["policy_loss_fn_args"] = {"mu_warmup_steps": 2, "mu_decay_steps": 6, "mu_peak": 0.7, "mu_valley": 0.1}
        c = make_case(rng, alg, experts=True)
        c["train_step"] = 4
        out.append((t, c))
    # Trainer-side (DataProto) advantages, the entropy clips (through the edited mask) and m2po.
    verl = [("grpo_verl", {}), ("grpo_verl", {"advantage_fn": "opmd_verl", "advantage_fn_args": {"opmd_baseline": "logavgexp", "tau": 0.6}}),
            ("grpo_verl", {"advantage_fn": "asymre_verl", "advantage_fn_args": {"baseline_shift": 0.2}}),
            ("grpo_verl", {"advantage_fn": "remax"}), ("grpo_verl", {"advantage_fn": "clipb", "advantage_fn_args": {"mu": 0.8}}),
            ("grpo_verl", {"advantage_fn": "clipv", "advantage_fn_args": {"mu": 0.5, "max_frac": 0.05}}),
            ("grpo_verl", {"advantage_fn": "clipv", "advantage_fn_args": {"mu": 0.5, "max_frac": 0.5}}),
            ("m2po", {}), ("m2po", {"policy_loss_fn_args": {"m2_threshold": 0.01, "log_ratio_clip": 0.3}})]
    for i, (t, extra) in enumerate(verl):
        alg = {"algorithm_type": t, "entropy_loss_fn_args": {"entropy_coef": 0.01}}
        alg.update(extra)
        c = make_case(rng, alg, B=7, given_adv=False)
        for e in c["experiences"]:
            e["reward_baseline"] = f32(rng.random())
            e["nec"] = [f32(rng.random() * 3) for _ in e["logprobs"]]
            if i % 2 == 1:  # all rows or none (trinity reads token rewards only when every row has them)
                e["token_rewards"] = [f32(rng.random() - 0.3) for _ in e["logprobs"]]
        out.append((f"verl-{i}-{extra.get('advantage_fn', t)}", c))
    for t, extra in [("grpo", {}), ("rloo", {}), ("opmd", {"advantage_fn_args": {"opmd_baseline": "logavgexp", "tau": 0.7}}),
                     ("asymre", {}), ("topr", {}), ("reinforceplusplus", {"advantage_fn_args": {"gamma": 0.9}}),
                     ("ppo", {"advantage_fn_args": {"gamma": 0.9, "lam": 0.8}})]:
        alg = {"algorithm_type": t}
        alg.update(extra)
        out.append((f"adv-{t}", make_case(rng, alg, B=7, given_adv=False, values=(t == "ppo"))))
    return out


def close(a, b, rtol, atol, path, errs):
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            errs.append(f"{path}: shape differs")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, rtol, atol, f"{path}[{i}]", errs)
        return
    if not (abs(a - b) <= atol + rtol * abs(b)):
        errs.append(f"{path}: trinity {a!r} vs torch {b!r}")


def run_cli(trinity, inp, work, name):
    ip, op = os.path.join(work, name + ".in.json"), os.path.join(work, name + ".out.json")
    with open(ip, "w") as f:
        json.dump(inp, f)
    p = subprocess.run([trinity, "debug", "loss", "--input", ip, "--output", op], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr
    with open(op) as f:
        return json.load(f), ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trinity", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failures = 0
    all_cases = [c for c in cases() if args.only in c[0]]
    for name, inp in all_cases:
        got, err = run_cli(args.trinity, inp, args.work, name)
        if got is None:
            print(f"FAIL {name}: trinity exited non-zero: {err.strip()}")
            failures += 1
            continue
        want = oracle(inp)
        errs = []
        close(got["loss"], want["loss"], 1e-5, 1e-6, "loss", errs)
        close(got["advantages"], want["advantages"], 1e-5, 1e-5, "advantages", errs)
        close(got["dlogprob"], want["dlogprob"], 1e-5, 1e-6, "dlogprob", errs)
        close(got["dentropy"], want["dentropy"], 1e-5, 1e-6, "dentropy", errs)
        close(got["action_mask"], want["action_mask"], 0, 0, "action_mask", errs)
        if abs(got["metrics"]["actor/final_loss"] - got["loss"]) > 1e-9 * max(1, abs(got["loss"])):
            errs.append("actor/final_loss != loss")
        # The same batch split into micro-batches of 2 gives the same result.
        if "dpo" not in name:
            split = dict(inp, micro_batch_size=2)
            got2, err2 = run_cli(args.trinity, split, args.work, name + ".mb2")
            if got2 is None:
                errs.append("micro_batch_size=2 failed: " + err2.strip())
            else:
                close(got2["loss"], want["loss"], 1e-5, 1e-6, "loss(mb=2)", errs)
                close(got2["dlogprob"], want["dlogprob"], 1e-5, 1e-6, "dlogprob(mb=2)", errs)
        # A constant Dr. GRPO length L (the trainer's max_response_tokens) through the same glue.
        if inp["algorithm"].get("loss_agg_mode") == "seq-mean-token-sum-norm":
            fixed = dict(inp, max_response_tokens=37)
            got3, err3 = run_cli(args.trinity, fixed, args.work, name + ".L37")
            want3 = oracle(fixed)
            if got3 is None:
                errs.append("max_response_tokens=37 failed: " + err3.strip())
            else:
                close(got3["loss"], want3["loss"], 1e-5, 1e-6, "loss(L=37)", errs)
                close(got3["dlogprob"], want3["dlogprob"], 1e-5, 1e-6, "dlogprob(L=37)", errs)
        if errs:
            failures += 1
            print(f"FAIL {name}:\n  " + "\n  ".join(errs[:8]))
    # CLI error handling: clear messages, non-zero exit.
    rng = random.Random(1)
    bad = [
        ("empty", {"algorithm": {"algorithm_type": "grpo"}, "experiences": [], "current_logprobs": []}, "empty batch"),
        ("unknown-type", dict(make_case(rng, {"algorithm_type": "grpo2"})), "valid types are"),
        ("unknown-arg", dict(make_case(rng, {"algorithm_type": "grpo", "policy_loss_fn_args": {"clip": 1}})), "clip_range"),
        ("bad-shape", dict(make_case(rng, {"algorithm_type": "grpo"}), current_logprobs=[[0.0]]), "current_logprobs"),
        ("bad-type", {"algorithm": {"algorithm_type": "grpo"}, "experiences": [{"group": 3, "reward": 1,
                      "logprobs": [-1.0], "ref_logprobs": [-1.0]}], "current_logprobs": [[-1.0]]}, "wrong type"),
    ]
    for name, inp, needle in bad:
        got, err = run_cli(args.trinity, inp, args.work, "err-" + name)
        if got is not None or needle not in err:
            failures += 1
            print(f"FAIL error case {name}: expected an error containing {needle!r}, got {err!r}")
    total = len(all_cases) + len(bad)
    print(f"{total - failures}/{total} cases agree with torch autograd")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
