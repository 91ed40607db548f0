#!/usr/bin/env python3
"""Second stage of a cargo-mutants shard (docs/theory/mutants.md): rerun every mutant the fast
command missed against the whole suite CI runs, `cargo test --release --workspace`.

Usage: whole_suite.py OUT CLONE
  OUT    the shard's `-o` directory (holds mutants.out/mutants.json and missed.txt)
  CLONE  a clean clone at the commit the shard ran on (mutated in place, reverted after each)

Prints one line per mutant: CAUGHT (the suite failed), MISSED, or TIMEOUT (30 min), with the
seconds it took; each mutant's cargo output goes to OUT/whole-suite/<i>.log.
A mutant the fast command catches, the whole suite catches too (it runs a superset of the
tests), so the two stages together score exactly the whole suite.
"""
import json
import os
import subprocess
import sys
import time

out, clone = sys.argv[1], sys.argv[2]
muts = {m["name"]: m for m in json.load(open(f"{out}/mutants.out/mutants.json"))}
missed = [l.strip() for l in open(f"{out}/mutants.out/missed.txt") if l.strip()]
logs = os.path.join(out, "whole-suite")
os.makedirs(logs, exist_ok=True)
for i, name in enumerate(missed):
    m = muts[name]
    lines = m["diff"].splitlines(keepends=True)
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ "), name
    # cargo-mutants' diff names the mutation in its `+++` line; git apply wants the path.
    f = m["file"]
    diff = f"--- a/{f}\n+++ b/{f}\n" + "".join(lines[2:])
    patch = os.path.join(logs, f"{i}.diff")
    with open(patch, "w") as fh:
        fh.write(diff if diff.endswith("\n") else diff + "\n")
    subprocess.run(["git", "apply", patch], cwd=clone, check=True)
    t = time.time()
    try:
        with open(os.path.join(logs, f"{i}.log"), "w") as log:
            r = subprocess.run(["cargo", "test", "--release", "--workspace"], cwd=clone,
                               stdout=log, stderr=subprocess.STDOUT, timeout=1800)
        verdict = "CAUGHT" if r.returncode != 0 else "MISSED"
    except subprocess.TimeoutExpired:
        verdict = "TIMEOUT"
    finally:
        subprocess.run(["git", "checkout", "--", "."], cwd=clone, check=True)
    print(f"{verdict}\t{time.time() - t:.0f}s\t{name}", flush=True)
