#!/usr/bin/env bash
# Run a command with throwaway PostgreSQL and Redis servers, then stop them.
#
#   scripts/with-services.sh .venv/bin/pytest -q
#
# Installs Debian's postgresql, redis-server and chromium when missing (needs root or sudo),
# starts both servers on free loopback ports in a temporary directory (PostgreSQL as the
# `postgres` user, since it refuses to run as root), exports DATABASE_URL, CELERY_BROKER_URL and
# REDIS_URL for the command, and removes everything on exit, whatever the command's result.
set -euo pipefail

need=()
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
[ -n "$pg_bin" ] && [ -x "$pg_bin/initdb" ] || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "with-services: installing ${need[*]} (Debian packages)" >&2
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
fi

# --- PgBouncer and HAProxy (Debian's): tests/hosts/test_pgbouncer.py starts its own PgBouncer
# in front of the PostgreSQL below, in session and in transaction mode (docs/deployment.md);
# tests/hosts/test_multihost.py puts HAProxy in front of two web hosts (it skips, saying why,
# where network namespaces are not allowed).
missing=()
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  echo "with-services: installing ${missing[*]} (Debian packages)" >&2
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

work=$(mktemp -d /tmp/rungwise-services.XXXXXX)
chmod 755 "$work"
pg_port=$(free_port)
redis_port=$(free_port)
run_as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  run_as_pg=(runuser -u postgres --)
  mkdir -p "$work/pg" && chown postgres:postgres "$work/pg"
else
  mkdir -p "$work/pg"
fi

cleanup() {
  set +e
  [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null
  "${run_as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

"${run_as_pg[@]}" "$pg_bin/initdb" -D "$work/pg/data" -U postgres -A trust -E UTF8 --no-locale >"$work/initdb.log" 2>&1 \
  || { cat "$work/initdb.log" >&2; exit 1; }
# Throwaway cluster: durability off makes the suite fast; nothing here outlives the run.
# RUNGWISE_PG_DURABLE=1 keeps PostgreSQL's defaults (fsync, synchronous commit, full-page
# writes on): what benchmarks/annotator_loop.py reports its headline on.
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
[ "${RUNGWISE_PG_DURABLE:-0}" = "1" ] && durability=""
"${run_as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -w \
  -o "-p $pg_port -k $work/pg -c listen_addresses=127.0.0.1 $durability -c max_connections=200 -c shared_preload_libraries=auto_explain" \
  start >/dev/null || { cat "$work/pg/server.log" >&2; exit 1; }
"${run_as_pg[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres rungwise

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log" --dir "$work"
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done

export DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/rungwise"
export CELERY_BROKER_URL="redis://127.0.0.1:$redis_port/0"
export REDIS_URL="$CELERY_BROKER_URL"
export RUNGWISE_PG_BIN="$pg_bin" RUNGWISE_PG_DATA="$work/pg/data" RUNGWISE_PG_PORT="$pg_port"
export RUNGWISE_REDIS_PORT="$redis_port" RUNGWISE_SERVICES_DIR="$work"
echo "with-services: PostgreSQL on $pg_port, Redis on $redis_port" >&2
set +e
"$@"
status=$?
exit $status
