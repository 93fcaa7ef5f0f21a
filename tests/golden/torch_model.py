"""Independent PyTorch implementation of the Qwen2 / Qwen3 / Llama-3 decoders, following the
Hugging Face transformers modeling code (rotate_half RoPE, llama3 rope scaling, GQA repeat_kv,
Qwen3 per-head q/k RMSNorm before RoPE, fp32 RMSNorm), plus a minimal safetensors reader/writer.
It is the numerical oracle for trinity's golden tests and the baseline of bench/train.
Run with Debian's /usr/bin/python3 (python3-torch)."""
import json
import math
import os
import struct

import numpy as np
import torch

# ---------------------------------------------------------------- safetensors
_NP = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[base + b:base + e]
        if info["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=_NP[info["dtype"]]).astype(np.float32)
        out[name] = torch.from_numpy(arr.copy()).reshape(info["shape"])
    return out


def write_safetensors(path, tensors, dtype="F32"):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        if dtype == "BF16":
            raw = t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
        else:
            raw = t.to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_dir(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        sd = {}
        for fn in files:
            sd.update(read_safetensors(os.path.join(model_dir, fn)))
    else:
        sd = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    return cfg, sd


# ---------------------------------------------------------------- model
def param_names(cfg):
    """HF parameter names and shapes, in HF order."""
    C, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    NH = cfg["num_attention_heads"]
    NKV = cfg.get("num_key_value_heads", NH)
    HS = cfg.get("head_dim") or C // NH
    mt = cfg["model_type"]
    bias = True if mt == "qwen2" else cfg.get("attention_bias", False)
    out = [("model.embed_tokens.weight", [V, C])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out.append((p + "input_layernorm.weight", [C]))
        for n, rows in (("q", NH * HS), ("k", NKV * HS), ("v", NKV * HS)):
            out.append((p + f"self_attn.{n}_proj.weight", [rows, C]))
            if bias:
                out.append((p + f"self_attn.{n}_proj.bias", [rows]))
        out.append((p + "self_attn.o_proj.weight", [C, NH * HS]))
        if bias and mt != "qwen2":
            out.append((p + "self_attn.o_proj.bias", [C]))
        if mt == "qwen3":
            out.append((p + "self_attn.q_norm.weight", [HS]))
            out.append((p + "self_attn.k_norm.weight", [HS]))
        out.append((p + "post_attention_layernorm.weight", [C]))
        out.append((p + "mlp.gate_proj.weight", [I, C]))
        out.append((p + "mlp.up_proj.weight", [I, C]))
        out.append((p + "mlp.down_proj.weight", [C, I]))
    out.append(("model.norm.weight", [C]))
    if not cfg.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [V, C]))
    return out


def inv_freq(cfg):
    C, NH = cfg["hidden_size"], cfg["num_attention_heads"]
    dim = cfg.get("head_dim") or C // NH
    base = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > lo_wl, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wavelen < hi_wl) * ~(wavelen > lo_wl)
        inv = torch.where(medium, smoothed, inv_l)
    return inv


def rmsnorm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Model:
    def __init__(self, cfg, sd):
        self.cfg, self.sd = cfg, sd
        C, NH = cfg["hidden_size"], cfg["num_attention_heads"]
        self.NH, self.NKV = NH, cfg.get("num_key_value_heads", NH)
        self.HS = cfg.get("head_dim") or C // NH
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.inv = inv_freq(cfg)

    def params(self):
        return [self.sd[n] for n, _ in param_names(self.cfg)]

    def hidden(self, ids):
        """ids: 1-D LongTensor for one sequence -> final normed hidden [T, C]."""
        cfg, sd, p = self.cfg, self.sd, "model.layers."
        T = ids.shape[0]
        pos = torch.arange(T, dtype=torch.int64).float()
        freqs = pos[:, None] * self.inv[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
        h = sd["model.embed_tokens.weight"][ids]
        mask = torch.full((T, T), float("-inf")).triu(1)
        for i in range(cfg["num_hidden_layers"]):
            q_ = f"{p}{i}."
            x = rmsnorm(h, sd[q_ + "input_layernorm.weight"], self.eps)

            def proj(n):
                y = x @ sd[q_ + f"self_attn.{n}_proj.weight"].T
                b = sd.get(q_ + f"self_attn.{n}_proj.bias")
                return y + b if b is not None else y

            q = proj("q").view(T, self.NH, self.HS)
            k = proj("k").view(T, self.NKV, self.HS)
            v = proj("v").view(T, self.NKV, self.HS)
            if cfg["model_type"] == "qwen3":
                q = rmsnorm(q, sd[q_ + "self_attn.q_norm.weight"], self.eps)
                k = rmsnorm(k, sd[q_ + "self_attn.k_norm.weight"], self.eps)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            rep = self.NH // self.NKV
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
            s = torch.einsum("thd,shd->hts", q, k) * (self.HS ** -0.5) + mask
            a = torch.softmax(s, dim=-1)
            o = torch.einsum("hts,shd->thd", a, v).reshape(T, self.NH * self.HS)
            h = h + o @ sd[q_ + "self_attn.o_proj.weight"].T
            if q_ + "self_attn.o_proj.bias" in sd:
                h = h + sd[q_ + "self_attn.o_proj.bias"]
            x = rmsnorm(h, sd[q_ + "post_attention_layernorm.weight"], self.eps)
            g = x @ sd[q_ + "mlp.gate_proj.weight"].T
            u = x @ sd[q_ + "mlp.up_proj.weight"].T
            h = h + (torch.nn.functional.silu(g) * u) @ sd[q_ + "mlp.down_proj.weight"].T
        return rmsnorm(h, sd["model.norm.weight"], self.eps)

    def head_weight(self):
        if self.cfg.get("tie_word_embeddings", False):
            return self.sd["model.embed_tokens.weight"]
        return self.sd["lm_head.weight"]

    def logprobs(self, ids, temperature=1.0):
        """(logprob of ids[t+1], entropy) for t = 0..T-2."""
        h = self.hidden(ids)[:-1]
        logits = (h @ self.head_weight().T) / temperature
        logp = torch.log_softmax(logits, dim=-1)
        lp = logp.gather(1, ids[1:, None])[:, 0]
        ent = -(logp.exp() * logp).sum(-1)
        return lp, ent


def random_state(cfg, seed, std=0.02):
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for name, shape in param_names(cfg):
        if "norm" in name:
            sd[name] = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            sd[name] = 0.1 * torch.randn(shape, generator=g)
        else:
            sd[name] = std * torch.randn(shape, generator=g)
    return sd
