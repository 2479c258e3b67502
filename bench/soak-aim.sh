#!/usr/bin/env bash
# The aimed nemesis against the reference: the default schedule (no
# --nemesis) on ack-before-commit over SEEDS seeds, the clean reference on a
# few, and each crash-related defect under the schedule that should catch it
# (the worker-process and downstream ones over SEEDS seeds, beside the clean
# reference under the same schedule). ROWS (a regular expression) keeps the
# rows whose name matches. Prints one table. Not part of `make test`: several
# minutes of soaks.
set -uo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-10}
CLEAN_SEEDS=${CLEAN_SEEDS:-3}
DURATION=${DURATION:-20s}
ROWS=${ROWS:-.}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/hookcert" ./cmd/hookcert || exit 2

row() { # name seed want args...
	local name=$1 seed=$2 want=$3; shift 3
	[[ $name =~ $ROWS ]] || return 0
	local dir="$out/r-$name-$seed"
	"$out/hookcert" soak --demo --seed "$seed" --duration "$DURATION" --concurrency 32 --report-dir "$dir" "$@" >"$dir.log" 2>&1
	local rc=$?
	python3 - "$dir/results.json" "$name" "$seed" "$rc" "$want" "$*" <<'PY'
import json, sys
path, name, seed, rc, want, args = sys.argv[1:]
try:
    s = json.load(open(path))["soak"]
except Exception as e:
    print(f"| {name} | {seed} | {rc} | - | - | - | - | {'ok' if rc == want else 'WRONG'} | {args} (no results: {e}) |"); sys.exit()
kinds = {}
for f in s["faults"]:
    a = f.get("aim", ""); k = f["kind"] + ("@ack" if a.startswith("acknowledgement") else "@commit" if a.startswith("commit") else "@timeout" if a.startswith("timeout") else "@downstream" if a.startswith("downstream") else "")
    kinds.setdefault(k, [0, 0]); kinds[k][0] += 1; kinds[k][1] += 1 if f.get("hit") else 0
fl = ", ".join(f"{k} {n} ({h} hit)" for k, (n, h) in sorted(kinds.items()))
ok = "ok" if rc == want else "WRONG"
print(f"| {name} | {seed} | {rc} | {s['acknowledged']} | {s['lost']} | {s['duplicated']} | {fl} | {ok} | {args} |")
PY
}

echo "| receiver | seed | exit | acknowledged | lost | duplicated | faults (aimed hits) | as expected | flags |"
echo "|---|---|---|---|---|---|---|---|---|"
for i in $(seq 1 "$SEEDS"); do row ack-before-commit $((1000 + i)) 1 --defect ack-before-commit; done
for i in $(seq 1 "$CLEAN_SEEDS"); do row clean $((2000 + i)) 0; done
# Crash-related defects, each under the schedule that aims at its window.
row marker-separate-tx 3001 1 --defect marker-separate-tx --nemesis kill@commit=2s
row business-first 3002 1 --defect business-first --nemesis kill@commit=2s
row memory-dedup 3003 1 --defect memory-dedup
row dedup-window 3004 1 --defect dedup-window
row ack-on-error 3005 1 --defect ack-on-error --nemesis pg-terminate@commit=2s
row inbox-ack-before-commit 3006 1 --mode inbox --defect inbox-ack-before-commit --rate 300
row mark-done-separate-tx 3007 1 --mode inbox --defect mark-done-separate-tx --rate 300 --nemesis kill@commit=2s
row no-lease-expiry 3008 1 --mode inbox --defect no-lease-expiry --rate 300 --nemesis kill@commit=2s
# kill@commit leaves the worker process holding a claim down while the other
# runs: only it can re-offer the claim (after the lease). The settle waits for
# that (quiescent: no claimed event) up to --settle-bound; requeue-on-boot
# keeps the claim until a process starts, so its settle uses the bound.
for i in $(seq 1 "$SEEDS"); do row requeue-on-boot $((3008 + i)) 1 --mode inbox --worker-processes 2 --defect requeue-on-boot --rate 300 --nemesis kill@commit=2s --settle-bound 40s; done
for i in $(seq 1 "$CLEAN_SEEDS"); do row clean-inbox-2-workers $((3100 + i)) 0 --mode inbox --worker-processes 2 --rate 300 --nemesis kill@commit=2s --settle-bound 40s; done
# kill@downstream: SIGKILL right after the sink applied a call whose answer it
# withholds; the resend must carry the same operation key.
for i in $(seq 1 "$SEEDS"); do row fresh-idempotency-key $((3200 + i)) 1 --mode inbox --defect fresh-idempotency-key --rate 300 --nemesis kill@downstream=2s; done
for i in $(seq 1 "$CLEAN_SEEDS"); do row clean-inbox-downstream $((3300 + i)) 0 --mode inbox --rate 300 --nemesis kill@downstream=2s; done
