"""Synthetic stores for the report's scale tests, written straight into DuckDB.

P(success) = sigmoid(ability - difficulty) from deterministic hashes (the model of
``benchmarks/bench_report.py``), a cost, tokens and a short output per episode.
``benchmarks`` > 1 splits the tasks over that many benchmarks (each agent runs one
experiment per benchmark).
"""

from __future__ import annotations

from pathlib import Path

from evalatlas.store.db import StoreConnection


def build_store(path: Path, n_agents: int, n_tasks: int, *, benchmarks: int = 1,
                attempts: int = 1, agent_prefix: str = "agent") -> None:
    with StoreConnection(path) as store:
        con = store.con
        con.execute(f"""
            INSERT INTO experiments (experiment_id, experiment_name, agent_id, agent_name,
                                     llm_model, benchmark_name, subset_n_tasks, labels,
                                     extra, source_file)
            SELECT printf('exp%04d-%d', a, b), printf('exp%04d-%d', a, b),
                   printf('agent%04d', a), printf('{agent_prefix}-%03d-with-a-longish-name', a),
                   'model-x', printf('bench-%d', b), {n_tasks} // {benchmarks}, '{{}}', '{{}}',
                   printf('runs/agent-%03d/results.jsonl', a)
            FROM range({n_agents}) r(a), range({benchmarks}) rb(b)
        """)
        con.execute(f"""
            INSERT INTO episodes (experiment_id, trajectory_id, task_id, attempt, success,
                                  reward, status, error_type, error_message, total_tokens,
                                  cost_usd, cost_source, wall_time_s, output_text)
            SELECT printf('exp%04d-%d', a, t % {benchmarks}), printf('t%05d_ep%d', t, k),
                   printf('task-%05d', t), k, ok, CASE WHEN ok THEN 1.0 ELSE 0.0 END,
                   CASE WHEN err THEN 'error' ELSE 'completed' END,
                   CASE WHEN err THEN 'TimeoutError' END,
                   CASE WHEN err THEN 'step limit reached after 600 s' END,
                   1000 + hash(a, t, k, 1) % 90000, (1000 + hash(a, t, k, 1) % 90000) * 3e-6,
                   'reported', 10 + hash(a, t, k, 2) % 900,
                   'patched ' || printf('src/module_%d.py', t % 97) || ' and ran the tests'
            FROM (
              SELECT a, t, k, (hash(a, t, k, 3) % 1000) < 30 AS err,
                     (hash(a, t, k) % 1000000) / 1e6
                       < 1 / (1 + exp(-((a / {n_agents} * 3 - 1.5)
                                        - ((hash(t) % 1000) / 1000.0 * 4 - 2)))) AS ok
              FROM range({n_agents}) ra(a), range({n_tasks}) rt(t), range({attempts}) rk(k)
            )
        """)
        con.execute("CHECKPOINT")
