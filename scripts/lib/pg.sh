# A throw-away PostgreSQL cluster for tests and benchmarks (issue 19). Source it.
#
#   pg_cluster_start DIR    initdb + start in DIR as the unprivileged user tvpg, Unix socket only
#                           (DIR/sock, no TCP listener); sets PG_CONNINFO and PG_DIR
#   pg_cluster_pause DIR    stop it (an outage), keeping its data
#   pg_cluster_resume DIR   start it again
#   pg_cluster_stop DIR     stop it and remove DIR (safe twice, and on a half-started cluster)
#
# Never touches the system's own cluster or service: everything lives under DIR.

PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}

_pg_as() { runuser -u tvpg -- "$@"; }

_pg_fail() {
  local dir=$1; shift
  echo "pg.sh: $*" >&2
  [ -f "$dir/log" ] && { echo "pg.sh: last lines of $dir/log:" >&2; tail -n 20 "$dir/log" >&2; }
  return 1
}

pg_cluster_start() {
  local dir=$1
  [ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] || { echo "pg.sh: no PostgreSQL server binaries under /usr/lib/postgresql (install the postgresql package: scripts/deps.sh)" >&2; return 1; }
  id tvpg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin tvpg
  mkdir -p "$dir/sock"
  chown -R tvpg "$dir"
  chmod 0700 "$dir"
  _pg_as test -x "$dir" || { _pg_fail "$dir" "$dir is not reachable by the user tvpg (a parent directory is not searchable); put the cluster in a directory of its own, e.g. mktemp -d /tmp/tunnelvision-pg.XXXXXX"; return 1; }
  _pg_as "$PG_BIN/initdb" -D "$dir/data" -U tunnelvision -A trust -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; _pg_fail "$dir" "initdb in $dir/data failed"; return 1; }
  pg_cluster_resume "$dir" || return 1
  _pg_as "$PG_BIN/createdb" -h "$dir/sock" -U tunnelvision tunnelvision 2>>"$dir/log" \
    || { _pg_fail "$dir" "createdb tunnelvision failed"; return 1; }
  PG_DIR=$dir
  PG_CONNINFO="host=$dir/sock dbname=tunnelvision user=tunnelvision"
  export PG_DIR PG_CONNINFO
}

pg_cluster_resume() {
  local dir=$1
  _pg_as "$PG_BIN/pg_ctl" -D "$dir/data" -w -t 60 -l "$dir/log" start \
    -o "-k $dir/sock -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    >/dev/null || { _pg_fail "$dir" "pg_ctl start in $dir/data failed"; return 1; }
}

pg_cluster_pause() {
  local dir=$1
  _pg_as "$PG_BIN/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >/dev/null || { _pg_fail "$dir" "pg_ctl stop in $dir/data failed"; return 1; }
}

pg_cluster_stop() {
  local dir=$1
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  if [ -f "$dir/data/postmaster.pid" ]; then
    _pg_as "$PG_BIN/pg_ctl" -D "$dir/data" -w -t 60 -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
