#!/usr/bin/env bash
# Apply each bug of catalogue.toml to the library, build, run the theory checks (quick profile,
# checks only) and record which checks fail; the patched file is restored with
# `git checkout -- FILE` after every bug, also on error or interruption.
#
# Usage: theory-checks/bugs/run.sh [--seed N] [--results FILE] [--baseline] [BUG ...]
#   BUG ...      names from catalogue.toml (default: all of them)
#   --seed N     check seed (default 20221, the runner's default)
#   --results F  markdown table (default theory-checks/bugs/RESULTS.md for a full run at the
#                default seed, /tmp/bugrun-results.md otherwise)
#   --baseline   also run the unpatched code first (one extra row, "(none)")
#   --timeout S  give up on a check run after S seconds (default 1800; a bug that makes a
#                convergence loop run to its cap is slow, not hung — the quick profile's
#                longest observed run under a bug was 403 s)
# Logs and check outputs go to /tmp/bugrun-<bug>/ (the repository's docs/ is never written).
set -euo pipefail

cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
CATALOGUE=theory-checks/bugs/catalogue.toml
SEED=20221
RESULTS=
BASELINE=0
TIMEOUT=1800
NAMES=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seed) SEED="$2"; shift 2 ;;
        --results) RESULTS="$2"; shift 2 ;;
        --baseline) BASELINE=1; shift ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) NAMES+=("$1"); shift ;;
    esac
done
if [ -z "$RESULTS" ]; then
    if [ ${#NAMES[@]} -eq 0 ] && [ "$SEED" = 20221 ]; then
        RESULTS=theory-checks/bugs/RESULTS.md
    else
        RESULTS=/tmp/bugrun-results.md
    fi
fi

# `catalogue <cmd> ...`: the catalogue helper (python3 ≥ 3.11 for tomllib).
catalogue() {
    python3 - "$CATALOGUE" "$@" <<'PY'
import sys, tomllib, json
path, cmd, *args = sys.argv[1:]
bugs = {b["name"]: b for b in tomllib.load(open(path, "rb"))["bug"]}
def edits(b):
    return [(b["find"], b["replace"])] + [(e["find"], e["replace"]) for e in b.get("extra", [])]
def problems(b):
    # every edit must occur exactly once in the unpatched file
    text = open(b["file"], encoding="utf-8").read()
    return [f"{b['name']}: `find` occurs {n} times in {b['file']} (need exactly 1): {find!r}"
            for find, _ in edits(b) if (n := text.count(find)) != 1]
if cmd == "names":
    print("\n".join(bugs))
elif cmd == "file":
    print(bugs[args[0]]["file"])
elif cmd == "apply":
    b = bugs[args[0]]
    if bad := problems(b):
        sys.exit("\n".join(bad))
    text = open(b["file"], encoding="utf-8").read()
    for find, replace in edits(b):
        text = text.replace(find, replace)
    open(b["file"], "w", encoding="utf-8").write(text)
elif cmd == "validate":
    # every named bug, before anything is patched
    if bad := [m for name in args for m in problems(bugs[name])]:
        sys.exit("\n".join(bad))
elif cmd == "failed":
    # args: summary.json; prints the names of the failed checks, comma-separated, then those
    # inconclusive (a guard failed, no test did: not a kill) as "(inconclusive: …)"
    recs = json.load(open(args[0], encoding="utf-8"))
    failed = [r["name"] for r in recs if not r["passed"] and not r.get("inconclusive")]
    unsure = [r["name"] for r in recs if not r["passed"] and r.get("inconclusive")]
    print(", ".join(failed) + (f" (inconclusive: {', '.join(unsure)})" if unsure else ""))
else:
    sys.exit(f"unknown command {cmd}")
PY
}

if [ ${#NAMES[@]} -eq 0 ]; then
    mapfile -t NAMES < <(catalogue names)
fi
declare -A FILE_OF
for name in "${NAMES[@]}"; do
    FILE_OF[$name]="$(catalogue file "$name")" || { echo "no bug named $name" >&2; exit 2; }
done
# Every edit must apply before the first (long) run starts, not an hour into it.
catalogue validate "${NAMES[@]}" || exit 2
FILES=$(printf '%s\n' "${FILE_OF[@]}" | sort -u)
# Refuse to patch files with uncommitted changes (the revert would destroy them).
# shellcheck disable=SC2086
if ! git diff --quiet HEAD -- $FILES; then
    echo "refusing: uncommitted changes in files the catalogue patches:" >&2
    # shellcheck disable=SC2086
    git diff --stat HEAD -- $FILES >&2
    exit 2
fi

CURRENT=
restore() {
    if [ -n "$CURRENT" ]; then
        git checkout -- "$CURRENT"
        CURRENT=
    fi
}
trap restore EXIT
trap 'restore; exit 130' INT TERM

COMMIT=$(git rev-parse --short HEAD)
ROWS=()
run_one() { # name (or empty for the unpatched baseline)
    local name="$1" label file out log start status failed build_s total_s
    label="${name:-(none)}"
    file="${name:+${FILE_OF[$name]}}"
    out="/tmp/bugrun-${name:-baseline}"
    rm -rf "$out"
    mkdir -p "$out"
    log="$out/log"
    start=$(date +%s)
    if [ -n "$name" ]; then
        CURRENT="$file"
        catalogue apply "$name"
    fi
    echo "== ${label}: building" >&2
    if ! nice -n 10 cargo build --release -p theory-checks >"$log.build" 2>&1; then
        failed="BUILD FAILED (see $log.build)"
    else
        build_s=$(($(date +%s) - start))
        echo "== ${label}: checks (build ${build_s} s)" >&2
        set +e
        timeout "$TIMEOUT" nice -n 10 cargo run --release -p theory-checks -- --no-experiments \
            --seed "$SEED" --out "$out/theory" >"$log" 2>"$log.err"
        status=$?
        set -e
        if [ "$status" = 124 ]; then
            failed="TIMEOUT after ${TIMEOUT} s (see $log)"
        elif [ -f "$out/theory/summary.json" ]; then
            failed="$(catalogue failed "$out/theory/summary.json")"
            case "$failed" in "" | " ("*) failed="SURVIVES (exit $status)$failed" ;; esac
        else
            # A panic aborts the runner before the summary is written: name the check.
            local where
            where=$(grep -o 'panicked at [^:]*' "$log.err" | head -n1 | sed 's/panicked at //')
            failed="PANIC (exit $status) at ${where:-?}"
        fi
    fi
    restore
    total_s=$(($(date +%s) - start))
    echo "== ${label}: ${failed} (${total_s} s)" >&2
    ROWS+=("| \`${label}\` | \`${file:-—}\` | ${failed} | ${total_s} s |")
}

T0=$(date +%s)
[ "$BASELINE" = 1 ] && run_one ""
for name in "${NAMES[@]}"; do
    run_one "$name"
done
WALL=$(($(date +%s) - T0))

{
    echo "# Bug catalogue results"
    echo
    echo "Commit \`$COMMIT\` (branch $(git branch --show-current)), $(date -u '+%Y-%m-%d %H:%M UTC'),"
    echo "seed $SEED, quick profile, checks only; each bug applied alone to the library and"
    echo "reverted afterwards. \"killed by\" lists the checks that FAILED (summary.json of the"
    echo "run); SURVIVES means no check failed (a check left inconclusive is named, not a kill)."
    echo "Time = incremental release build + checks."
    echo "Whole run: ${WALL} s on this machine (2 cores shared with other jobs)."
    echo
    echo "| bug | file | killed by (checks that failed) | time |"
    echo "|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
} >"$RESULTS"
echo "wrote $RESULTS (${WALL} s)" >&2
