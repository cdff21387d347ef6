#!/usr/bin/env bash
# pg_cluster.sh — run a command against a throwaway PostgreSQL cluster.
#
#   tests/store/pg_cluster.sh COMMAND [ARGS...]
#
# initdb + pg_ctl in a fresh temp dir, socket-only (unix socket in that dir, no TCP port,
# so parallel runs never collide), trust auth for the superuser "peri" only: every other
# role must log in with its password (scram-sha-256, pg_hba.conf), so a test can create a
# role with a password and check the password path (test_store's test_password). The
# command runs
# with PERI_TEST_PG_URL=postgresql:///postgres?host=<dir>&user=peri (an admin URL: tests
# create and drop their own databases) and PERI_TEST_PG_SOCKDIR=<dir>. The cluster is
# stopped and the dir removed on every exit path (trap), and the command's exit status
# is returned. initdb refuses root: as root the server runs as nobody:nogroup (setpriv).
# Extra server settings: PERI_PG_SERVER_OPTS (default "-c fsync=off": a throwaway
# cluster needs no power-loss safety; set it to "" for a durable one, as the benchmark does).
# PERI_PG_TCP=1 also listens on 127.0.0.1 at a free port (scram-sha-256 for every role
# there) and exports it as PERI_TEST_PG_PORT, for clients that speak TCP (pgwire's test).
# It also turns TLS on with a throwaway self-signed certificate for "localhost"
# (PERI_TEST_PG_CERT: its path), and the role pgw_clear logs in with a cleartext
# password over TLS only (hostssl ... password), for the wire client's TLS checks.
# No PostgreSQL found: exit 1 with a message (never a silent skip).
set -euo pipefail

find_bin() {
    local b
    for b in /usr/lib/postgresql/*/bin/"$1"; do
        [ -x "$b" ] && { echo "$b"; return 0; }
    done
    command -v "$1" 2>/dev/null && return 0
    return 1
}

INITDB=$(find_bin initdb) || { echo "pg_cluster.sh: PostgreSQL (initdb) not found: install postgresql (scripts/deps.sh)" >&2; exit 1; }
PGCTL=$(find_bin pg_ctl) || { echo "pg_cluster.sh: pg_ctl not found" >&2; exit 1; }

DIR=$(mktemp -d /tmp/peri-pg-XXXXXX)
chmod 0755 "$DIR"
AS=()
if [ "$(id -u)" = 0 ]; then
    chown nobody:nogroup "$DIR"
    AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi

cleanup() {
    local rc=$?
    if [ -f "$DIR/data/postmaster.pid" ]; then
        (cd "$DIR" && "${AS[@]}" "$PGCTL" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1) || true
    fi
    rm -rf "$DIR"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$DIR" && "${AS[@]}" "$INITDB" -D "$DIR/data" -U peri --auth=trust --no-sync -E UTF8 \
    --locale=C >"$DIR/initdb.log" 2>&1) || { cat "$DIR/initdb.log" >&2; exit 1; }
# Who may log in how: the admin role "peri" is trusted (the harness and the tests' own
# setup connect as it); any other role needs its password (scram-sha-256).
(cd "$DIR" && "${AS[@]}" sh -c "printf '%s\n' 'local all peri trust' \
    'local all all scram-sha-256' >'$DIR/data/pg_hba.conf'")
LISTEN="-c listen_addresses="
PORTQ=""
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
if [ "${PERI_PG_TCP:-}" = 1 ]; then
    PORT=$(free_port)
    (cd "$DIR" && "${AS[@]}" sh -c "printf '%s\n' 'hostssl all pgw_clear 127.0.0.1/32 password' \
        'host all all 127.0.0.1/32 scram-sha-256' >>'$DIR/data/pg_hba.conf'")
    (cd "$DIR" && "${AS[@]}" openssl req -new -x509 -days 2 -nodes -subj /CN=localhost \
        -addext subjectAltName=DNS:localhost -keyout "$DIR/data/server.key" \
        -out "$DIR/data/server.crt" >/dev/null 2>&1) || { echo "pg_cluster.sh: openssl req failed" >&2; exit 1; }
    chmod 0600 "$DIR/data/server.key"
    export PERI_TEST_PG_CERT="$DIR/data/server.crt"
fi
# The free port is only free when it was asked for: another process may bind it before
# the server does. A start that failed for that reason is tried again on a new port
# (the server log says "could not bind"); any other failure ends the run.
for attempt in 1 2 3 4 5; do
    [ "${PERI_PG_TCP:-}" = 1 ] && LISTEN="-c listen_addresses=127.0.0.1 -p $PORT -c ssl=on"
    if (cd "$DIR" && "${AS[@]}" "$PGCTL" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
        -o "-k $DIR $LISTEN -c max_connections=60 ${PERI_PG_SERVER_OPTS--c fsync=off}" start \
        >/dev/null); then
        break
    fi
    if [ "${PERI_PG_TCP:-}" = 1 ] && [ "$attempt" -lt 5 ] &&
        grep -q 'could not bind' "$DIR/server.log" 2>/dev/null; then
        echo "pg_cluster.sh: port $PORT was taken before the server bound it; trying another" >&2
        PORT=$(free_port)
        continue
    fi
    cat "$DIR/server.log" >&2
    exit 1
done
if [ "${PERI_PG_TCP:-}" = 1 ]; then
    PORTQ="&port=$PORT"
    export PERI_TEST_PG_PORT="$PORT"
fi

export PERI_TEST_PG_URL="postgresql:///postgres?host=$DIR&user=peri$PORTQ"
export PERI_TEST_PG_SOCKDIR="$DIR"
set +e
"$@"
rc=$?
set -e
exit $rc
