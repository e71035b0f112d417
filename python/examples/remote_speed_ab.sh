#!/usr/bin/env bash
# Before/after of the remote env path in one interleaved run: for each
# repeat, the older commit BEFORE and the working tree each get
#   - serve/cli's BenchmarkEnvServeCPU (server CPU per env step against
#     the same vector in process, Go client; the older build over HTTP,
#     the new one over frames and HTTP), and
#   - python/examples/speed.py (env-steps/s from 16 envs through
#     streamscale_env.sb3.VecEnv and the Gymnasium vector, with that
#     side's own Python client and server),
# with the load average (uptime) printed before each.
#
#   python/examples/remote_speed_ab.sh BEFORE [REPEATS] [SECONDS]
#
# Run from the repository root; Gymnasium and SB3 from
# $STREAMSCALE_PEERS (default ../shared/peers/python). Scratch files go
# to a temporary directory, removed at exit.
set -euo pipefail
before=${1:?usage: remote_speed_ab.sh BEFORE-COMMIT [REPEATS] [SECONDS]}
repeats=${2:-3}
seconds=${3:-8}
peers=${STREAMSCALE_PEERS:-$(cd .. && pwd)/shared/peers/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PATH="$PATH:/usr/local/go/bin"

mkdir -p "$tmp/before"
git archive "$before" | tar -x -C "$tmp/before"
(cd "$tmp/before" && go build -o "$tmp/serve-before" ./serve)
go build -o "$tmp/serve-after" ./serve
go test -c -o "$tmp/cli.test" ./serve/cli

for r in $(seq 1 "$repeats"); do
  for side in before after; do
    tree=$PWD
    [ "$side" = before ] && tree="$tmp/before"
    echo "== repeat $r $side ($(uptime | sed 's/.*load/load/'))"
    (cd serve/cli && STREAMSCALE_ENV_BIN="$tmp/serve-$side" "$tmp/cli.test" -test.run '^$' \
      -test.bench EnvServeCPU -test.benchtime "${seconds}s" 2>&1 | grep -E 'Benchmark|server/inproc|SKIP' || true)
    (cd "$tree/python" && STREAMSCALE_ENV_BIN="$tmp/serve-$side" PYTHONPATH="$peers:." /usr/bin/python3 \
      examples/speed.py --seconds "$seconds" --repeats 1 --modes sb3,gym)
    if [ "$side" = after ]; then  # the new client on loopback TCP too (before had only TCP)
      (cd python && STREAMSCALE_ENV_BIN="$tmp/serve-after" PYTHONPATH="$peers:." /usr/bin/python3 \
        examples/speed.py --seconds "$seconds" --repeats 1 --modes sb3 --tcp)
    fi
  done
done
