"""Writes the golden fixtures for trinity's engine tests, computed by PyTorch (torch_model.py):
three checkpoints (qwen2 with q/k/v bias and GQA; qwen3 with q/k norm, head_dim != hidden/heads and
tied embeddings; llama with llama3 rope scaling and bf16 weights), token sequences of varied
lengths, expected logprobs/entropy, gradients of L = -sum(logprobs) for every parameter, and the
loss trajectory of 10 AdamW steps with grad clipping and a cosine schedule with warm-up; and per
checkpoint a PEFT LoRA adapter (lora/) with the logprobs of base + adapter and the gradients of L with
respect to every lora_A / lora_B, computed through the merged weights W + alpha/r · B A.
Usage: /usr/bin/python3 make_fixtures.py OUT_DIR"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Model, param_names, random_state, read_safetensors, write_safetensors  # noqa

torch.set_num_threads(2)

CONFIGS = {
    "qwen2": dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=64,
                  intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=211, rms_norm_eps=1e-6, rope_theta=10000.0,
                  max_position_embeddings=512, tie_word_embeddings=False, torch_dtype="float32",
                  bos_token_id=1, eos_token_id=2, hidden_act="silu"),
    "qwen3": dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=64,
                  intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=24, vocab_size=199, rms_norm_eps=1e-6,
                  rope_theta=1000000.0, max_position_embeddings=512, tie_word_embeddings=True,
                  attention_bias=False, torch_dtype="float32", bos_token_id=None,
                  eos_token_id=3, hidden_act="silu"),
    "llama": dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=96,
                  intermediate_size=192, num_hidden_layers=3, num_attention_heads=6,
                  num_key_value_heads=2, vocab_size=257, rms_norm_eps=1e-5, rope_theta=500000.0,
                  max_position_embeddings=1024, tie_word_embeddings=False, attention_bias=False,
                  mlp_bias=False, torch_dtype="bfloat16", bos_token_id=128, eos_token_id=[129, 130],
                  hidden_act="silu",
                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                    high_freq_factor=4.0, original_max_position_embeddings=32)),
}

LENGTHS = [37, 5, 64, 2, 19]
ADAMW = dict(lr=2e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01, grad_clip=1.0,
             warmup=2, total=10, min_lr_ratio=0.1)


def cosine_factor(step, warmup, total, min_ratio):
    """verl/Trinity get_cosine_schedule_with_warmup (num_cycles 0.5)."""
    if step < warmup:
        return float(step) / float(max(1, warmup))
    progress = float(step - warmup) / float(max(1, total - warmup))
    x = math.cos(math.pi * 0.5 * 2.0 * progress)
    return max(min_ratio, x * (1 - min_ratio) * 0.5 + (1 + min_ratio) * 0.5)


def seqs_for(vocab, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (n,), generator=g) for n in LENGTHS]


def total_loss(model, seqs):
    return -sum(model.logprobs(s)[0].sum() for s in seqs)


LORA = {  # family -> (rank, alpha, target_modules)
    "qwen2": (4, 8.0, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    "qwen3": (3, 12.0, ["q_proj", "k_proj", "v_proj", "o_proj"]),
    "llama": (4, 16.0, ["q_proj", "gate_proj", "up_proj", "down_proj"]),
}
LORA_PATHS = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
              "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def lora_fixture(d, name, cfg, sd, seqs, seed):
    """PEFT adapter with random A and B, and PyTorch's logprobs / adapter gradients through it."""
    rank, alpha, targets = LORA[name]
    g = torch.Generator().manual_seed(seed)
    adapter = {}
    merged = {k: v.detach() for k, v in sd.items()}
    for layer in range(cfg["num_hidden_layers"]):
        for mod in targets:
            base = f"model.layers.{layer}.{LORA_PATHS[mod]}.{mod}"
            w = merged[base + ".weight"]
            a = (torch.randn(rank, w.shape[1], generator=g) * 0.2).requires_grad_(True)
            b = (torch.randn(w.shape[0], rank, generator=g) * 0.2).requires_grad_(True)
            adapter[f"base_model.model.{base}.lora_A.weight"] = a
            adapter[f"base_model.model.{base}.lora_B.weight"] = b
            merged[base + ".weight"] = w + (alpha / rank) * (b @ a)
    ld = os.path.join(d, "lora")
    os.makedirs(ld, exist_ok=True)
    with open(os.path.join(ld, "adapter_config.json"), "w") as f:
        json.dump(dict(peft_type="LORA", task_type="CAUSAL_LM", r=rank, lora_alpha=alpha, lora_dropout=0.0,
                       target_modules=targets, bias="none", fan_in_fan_out=False, modules_to_save=None,
                       use_rslora=False, use_dora=False, base_model_name_or_path=d), f, indent=1)
    write_safetensors(os.path.join(ld, "adapter_model.safetensors"), adapter)
    model = Model(cfg, merged)
    with torch.no_grad(), open(os.path.join(d, "expected_lora_logprobs.jsonl"), "w") as f:
        for s in seqs:
            lp, ent = model.logprobs(s)
            f.write(json.dumps({"logprobs": lp.tolist(), "entropy": ent.tolist()}) + "\n")
    total_loss(model, seqs).backward()
    write_safetensors(os.path.join(d, "expected_lora_grads.safetensors"), {n: t.grad for n, t in adapter.items()})


def main(out):
    os.makedirs(out, exist_ok=True)
    for i, (name, cfg) in enumerate(CONFIGS.items()):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        sd = random_state(cfg, seed=100 + i, std=0.15)
        dtype = "BF16" if cfg["torch_dtype"] == "bfloat16" else "F32"
        write_safetensors(os.path.join(d, "model.safetensors"), sd, dtype)
        sd = read_safetensors(os.path.join(d, "model.safetensors"))  # bf16-rounded values
        seqs = seqs_for(cfg["vocab_size"], 200 + i)
        with open(os.path.join(d, "tokens.jsonl"), "w") as f:
            for s in seqs:
                f.write(json.dumps({"tokens": s.tolist()}) + "\n")
        lora_fixture(d, name, cfg, sd, seqs, 300 + i)
        model = Model(cfg, sd)
        with torch.no_grad(), open(os.path.join(d, "expected_logprobs.jsonl"), "w") as f:
            for s in seqs:
                lp, ent = model.logprobs(s)
                f.write(json.dumps({"logprobs": lp.tolist(), "entropy": ent.tolist()}) + "\n")
        # Gradients of L = -sum logprobs.
        for p in sd.values():
            p.requires_grad_(True)
        loss = total_loss(model, seqs)
        loss.backward()
        write_safetensors(os.path.join(d, "expected_grads.safetensors"),
                          {n: sd[n].grad for n, _ in param_names(cfg)})
        # AdamW trajectory (mean loss per token, as a trainer would use).
        for p in sd.values():
            p.grad = None
        params = [sd[n] for n, _ in param_names(cfg)]
        a = ADAMW
        opt = torch.optim.AdamW(params, lr=a["lr"], betas=a["betas"], eps=a["eps"],
                                weight_decay=a["weight_decay"])
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: cosine_factor(s, a["warmup"], a["total"], a["min_lr_ratio"]))
        ntok = sum(len(s) - 1 for s in seqs)
        losses, norms = [], []
        for _ in range(a["total"]):
            opt.zero_grad()
            loss = total_loss(model, seqs) / ntok
            loss.backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(params, a["grad_clip"])))
            opt.step()
            sched.step()
            losses.append(float(loss))
        with torch.no_grad():
            final = float(total_loss(model, seqs) / ntok)
        with open(os.path.join(d, "expected_adamw.json"), "w") as f:
            json.dump(dict(ADAMW, betas=list(a["betas"]), losses=losses, grad_norms=norms,
                           final_loss=final), f, indent=1)
        print(f"fixtures: {name}: {len(param_names(cfg))} tensors, losses {losses[0]:.4f} -> {final:.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
