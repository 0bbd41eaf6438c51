"""Run py-irt 0.7.1's 2PL (Pyro SVI) on a py-irt JSON-lines file; print timing + params.

Run by ``bench_atlas.py`` with the interpreter of a separate venv that has py-irt
(it pins its own torch/pyro):

    python3 -m venv .venv-pyirt && .venv-pyirt/bin/pip install torch==2.13.0 py-irt==0.7.1
    .venv-pyirt/bin/python benchmarks/pyirt_baseline.py DATA.jsonlines OUT.json --epochs 2000

Writes ``{"seconds", "ability": {subject: value}, "diff": {item: value},
"disc": {item: value}}``. ``seconds`` covers dataset loading and training.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--epochs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import torch
    from py_irt.config import IrtConfig
    from py_irt.training import IrtModelTrainer

    torch.set_num_threads(1)
    started, started_cpu = time.perf_counter(), time.process_time()
    config = IrtConfig(model_type="2pl", epochs=args.epochs, seed=args.seed, log_every=10**9)
    trainer = IrtModelTrainer(data_path=args.data, config=config, verbose=False)
    trainer.train(device="cpu")
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - started_cpu
    p = trainer.export(None)
    subjects = p["subject_ids"]
    items = p["item_ids"]
    out = {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "ability": {subjects[i]: v for i, v in enumerate(p["ability"])},
        "diff": {items[i]: v for i, v in enumerate(p["diff"])},
        "disc": {items[i]: v for i, v in enumerate(p["disc"])},
        "torch": torch.__version__,
    }
    args.out.write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    main()
