#!/usr/bin/env bash
# Runs the independent numpy implementation and checks it with `fedmix validate`, round by round:
# Phase 2 FedAvg s = 5, Phase 2 FedProx, IFCA option I, IFCA option II (τ = 5), the update of
# IFCA's released code (lr on torch's MSELoss, checked against option I at eta = 2 lr), and one
# deliberately wrong candidate (aggregation weights n_i/N_j instead of n_i/N), which must be
# caught at round 1. Usage: validate_against_fedmix.sh [path/to/fedmix]   (exit 0 = all as expected)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
B="${1:-$here/../../target/release/fedmix}"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
PY="python3 $here/fedmix_numpy.py"

"$B" generate --setting sxy-unbalanced-both --seed 3 --set d=10 --set clients=60 --set samples=12 \
     --set sizes=lognormal --set size_min=2 --set size_max=60 --out "$W/D" > /dev/null
python3 -c "import numpy as np; t = np.load('$W/D/theta_star.npy'); \
np.save('$W/theta0.npy', t + 0.3 * np.random.default_rng(7).standard_normal(t.shape) / t.shape[1] ** 0.5)"

common=(--data "$W/D" --init "$W/theta0.npy" --set rounds=20 --rtol 1e-9)
echo "== Phase 2, FedAvg s = 5"
$PY --data "$W/D" --algorithm phase2 --init "$W/theta0.npy" --eta 0.05 --local-steps 5 \
    --local-solver fedavg --rounds 20 --out "$W/fedavg" > /dev/null
"$B" validate --algorithm phase2 "${common[@]}" --set eta=0.05 --set local_steps=5 \
     --iterates "$W/fedavg/iterates.npy" --labels "$W/fedavg/labels.npy"
echo "== Phase 2, FedProx"
$PY --data "$W/D" --algorithm phase2 --init "$W/theta0.npy" --eta 0.05 --local-solver fedprox \
    --rounds 20 --out "$W/fedprox" > /dev/null
"$B" validate --algorithm phase2 "${common[@]}" --set eta=0.05 --set local_solver=fedprox \
     --iterates "$W/fedprox/iterates.npy" --labels "$W/fedprox/labels.npy"
echo "== IFCA option I (gradient averaging)"
$PY --data "$W/D" --algorithm ifca --init "$W/theta0.npy" --eta 0.05 --ifca-option gradient \
    --rounds 20 --out "$W/ifca1" > /dev/null
"$B" validate --algorithm ifca "${common[@]}" --set eta=0.05 --set ifca_option=gradient \
     --set restarts=1 --iterates "$W/ifca1/iterates.npy" --labels "$W/ifca1/labels.npy"
echo "== IFCA option II (model averaging, tau = 5)"
$PY --data "$W/D" --algorithm ifca --init "$W/theta0.npy" --eta 0.05 --ifca-option model \
    --local-steps 5 --rounds 20 --out "$W/ifca2" > /dev/null
"$B" validate --algorithm ifca "${common[@]}" --set eta=0.05 --set ifca_option=model \
     --set local_steps=5 --set restarts=1 --iterates "$W/ifca2/iterates.npy" --labels "$W/ifca2/labels.npy"
echo "== IFCA's released code's update (lr = 0.025 on torch's MSELoss) = fedmix IFCA option I, eta = 2 lr"
"$B" generate --setting ifca-official --seed 2 --set d=20 --set clients=40 --set samples=30 \
     --out "$W/DO" > /dev/null
"$B" run --algorithm ifca-official --data "$W/DO" --seed 5 --set ifca_official_inits=1 \
     --set 'ifca_official_lrs=[0.025]' --set ifca_official_iterations=30 \
     --export-randomness "$W/RO" --save-iterates --out "$W/official" > /dev/null
python3 -c "import numpy as np; a = np.load('$W/RO/init.npy'); np.save('$W/official0.npy', a[0] if a.ndim == 3 else a)"
$PY --data "$W/DO" --algorithm ifca-official-update --init "$W/official0.npy" --eta 0.025 \
    --rounds 30 --out "$W/ifcaoff" > /dev/null
official=(--data "$W/DO" --init "$W/official0.npy" --set rounds=30 --set ifca_option=gradient --set restarts=1)
"$B" validate --algorithm ifca "${official[@]}" --set eta=0.05 --rtol 1e-9 \
     --iterates "$W/ifcaoff/iterates.npy" --labels "$W/ifcaoff/labels.npy"
# …and fedmix's own ifca-official run of that (init, lr) is the same trajectory, bit for bit.
"$B" validate --algorithm ifca "${official[@]}" --set eta=0.05 --rtol 0 \
     --iterates "$W/official/iterates.npy" --labels "$W/official/iterate_labels.npy" | tail -1
set +e
"$B" validate --algorithm ifca "${official[@]}" --set eta=0.025 \
     --iterates "$W/ifcaoff/iterates.npy" > /dev/null
status=$?
set -e
if [ "$status" -ne 1 ]; then
  echo "FAIL: eta = lr (not 2 lr) was not told apart from the official update (status $status)"
  exit 1
fi
echo "eta = lr instead of 2 lr: told apart (exit 1), as it must be"
echo "== deliberately wrong candidate: per-cluster weights n_i/N_j (must fail at round 1)"
$PY --data "$W/D" --algorithm phase2 --init "$W/theta0.npy" --eta 0.05 --local-steps 5 \
    --local-solver fedavg --rounds 20 --deliberately-wrong cluster-size --out "$W/wrong" > /dev/null
set +e
out=$("$B" validate --algorithm phase2 "${common[@]}" --set eta=0.05 --set local_steps=5 \
      --iterates "$W/wrong/iterates.npy" --labels "$W/wrong/labels.npy")
status=$?
set -e
echo "$out" | head -3
echo "$out" | tail -2
if [ "$status" -ne 1 ] || ! echo "$out" | grep -q "first round beyond tolerance: 1"; then
  echo "FAIL: the wrong candidate was not caught at round 1 (status $status)"
  exit 1
fi
echo "numpy implementation: 5 trajectories matched (the official IFCA update at eta = 2 lr among them), 1 wrong candidate caught at round 1"
echo "validate: 7 passed, 0 failed"
