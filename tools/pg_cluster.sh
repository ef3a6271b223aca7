#!/bin/sh
# pg_cluster.sh - a throwaway local PostgreSQL 15 cluster for livedb-pg's
# tests, demo and benchmark.
#
#   tools/pg_cluster.sh start DIR   initdb in DIR, start on a free loopback
#                                   port, write DIR/conninfo, print it
#   tools/pg_cluster.sh stop DIR    stop the server and remove DIR
#   tools/pg_cluster.sh restart DIR stop and start again (same port)
#
# The server runs as an unprivileged user (the caller, or "postgres" when
# the caller is root), listens on 127.0.0.1 only, with wal_level=logical.
# Role "livedb" (LOGIN REPLICATION, password "livedb-test", SCRAM over TCP)
# owns database "livedb"; the superuser connects through DIR's socket only.
# DIR/conninfo holds the role's libpq connection string, DIR/admin the
# superuser's.
set -eu
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|restart DIR" >&2; exit 2; }

bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || dirname "$(command -v pg_ctl)")}
[ -x "$bindir/pg_ctl" ] || { echo "$0: PostgreSQL 15 not found (apt-get install postgresql-15)" >&2; exit 1; }

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    # A port nobody listens on, in the dynamic range, chosen at random.
    while :; do
        p=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 30000 ))
        if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo $p; return; fi
    done
}

start_server() {
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
}

case $cmd in
start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres --no-locale -E UTF8 \
        --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    port=$(free_port)
    cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
wal_level = logical
max_replication_slots = 32
max_wal_senders = 32
max_connections = 100
wal_writer_delay = 10ms
fsync = off
full_page_writes = off
synchronous_commit = on
CONF
    start_server
    as_owner "$bindir/psql" -h "$dir" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 <<SQL >/dev/null
CREATE ROLE livedb LOGIN REPLICATION PASSWORD 'livedb-test';
CREATE DATABASE livedb OWNER livedb;
SQL
    echo "host=127.0.0.1 port=$port user=livedb password=livedb-test dbname=livedb" > "$dir/conninfo"
    echo "host=$dir port=$port user=postgres dbname=livedb" > "$dir/admin"
    cat "$dir/conninfo"
    ;;
stop)
    [ -d "$dir/data" ] && as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
restart)
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    start_server
    ;;
*) echo "usage: $0 start|stop|restart DIR" >&2; exit 2 ;;
esac
