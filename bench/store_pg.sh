#!/usr/bin/env bash
# bench/store_pg.sh [BUILD_DIR] — the session store on SQLite vs PostgreSQL, side by side
#. Starts a throwaway PostgreSQL cluster (tests/store/pg_cluster.sh, unix
# socket only, DURABLE settings: fsync on; then again with synchronous_commit=off, the
# durability class of SQLite's WAL + synchronous=NORMAL: safe against a process crash,
# not against power loss) and runs, alternating the backends:
#   peri-store-bench   message appends/s (medians of 5 reps of 1000 appends)
#   peri-acp-bench     ACP prompt turns/s and p50 latency against an instant model
#                      (medians of 3 runs of 600 turns)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
export B
PSQL=$(ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | tail -1)
export PSQL

inner() {
    set -euo pipefail
    local label=$1
    mkdb() { local d="bench_${RANDOM}_${RANDOM}"; "$PSQL" -X -q -d "$PERI_TEST_PG_URL" -c "CREATE DATABASE $d" >/dev/null
             echo "postgresql:///$d?${PERI_TEST_PG_URL#*\?}"; }
    for i in 1 2 3; do
        [ "$label" = durable ] && echo "sqlite acp: $("$B"/peri-acp-bench 600 10 200 | grep '^turns')"
        echo "postgresql($label) acp: $("$B"/peri-acp-bench 600 10 200 "$(mkdb)" | grep '^turns')"
    done
    [ "$label" = durable ] && echo "store: $("$B"/peri-store-bench sqlite 1000 5)"
    echo "store($label): $("$B"/peri-store-bench "$(mkdb)" 1000 5)"
}
export -f inner
PERI_PG_SERVER_OPTS="" tests/store/pg_cluster.sh bash -c 'inner durable'
PERI_PG_SERVER_OPTS="-c synchronous_commit=off" tests/store/pg_cluster.sh bash -c 'inner async'
