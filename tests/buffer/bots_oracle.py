#!/usr/bin/python3
"""Independent numpy model of BOTS' estimator (trinity-rft.md §4.5, Trinity-RFT's
InterpolationBetaPREstimator) for buffer_difficulty_test. Input JSON on argv[1]:
{"features": [[f0, f1], ...], "m", "lamb", "rho", "adaptive_rho", "feedback": [[rows, pass_rates], ...]}
Prints {"alphas": [[...] per feedback], "betas": [...], "cap": [...], "rho": [...]}."""
import json
import sys

import numpy as np


def main():
    cfg = json.load(open(sys.argv[1]))
    feats = np.array(cfg["features"], dtype=float)
    n, m, lamb, rho = len(feats), cfg["m"], cfg["lamb"], cfg["rho"]
    alphas, betas, cap = np.ones(n), np.ones(n), None
    out = {"alphas": [], "betas": [], "cap": [], "rho": []}
    for rows, prs in cfg["feedback"]:
        prs = np.array(prs, dtype=float)
        anchor = np.mean(feats[rows], axis=0)
        est = (np.mean(prs) - anchor[0]) / (anchor[1] - anchor[0] + 1e-6)
        cap = est if cap is None else 0.9 * cap + 0.1 * est
        s_bar, f_bar = np.zeros(n), np.zeros(n)
        s_bar[rows] = prs * m
        f_bar[rows] = (1 - prs) * m
        p_tilde = np.clip((feats[:, 1] - feats[:, 0]) * cap + feats[:, 0], 0, 1)
        if cfg["adaptive_rho"] and np.mean(np.abs(p_tilde[rows] - prs)) >= 0.25:
            rho *= 0.5
        p_tilde[rows] = prs
        alphas = (1 - lamb) * alphas + lamb + (1 - rho) * s_bar + rho * p_tilde * m
        betas = (1 - lamb) * betas + lamb + (1 - rho) * f_bar + rho * (1 - p_tilde) * m
        out["alphas"].append(alphas.tolist())
        out["betas"].append(betas.tolist())
        out["cap"].append(float(cap))
        out["rho"].append(rho)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
