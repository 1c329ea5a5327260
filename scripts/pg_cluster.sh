#!/usr/bin/env bash
# A throw-away PostgreSQL cluster without Docker: initdb in a folder, the server on a Unix socket in that
# folder (no TCP port), run as an unprivileged user (as root: the `postgres` user of Debian's package,
# or one created here). Usage:
#   bash scripts/pg_cluster.sh start DIR   # prints the admin connection string (database postgres)
#   bash scripts/pg_cluster.sh stop DIR
# docs/semantics.md#postgresql-without-docker shows the whole set-up (port-db, the reader role, eval).
set -euo pipefail
action="${1:?usage: pg_cluster.sh start|stop DIR}"
dir="$(realpath -m "${2:?usage: pg_cluster.sh start|stop DIR}")"
bindir="${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "PostgreSQL's server programs not found (apt-get install postgresql, or set PG_BINDIR)" >&2
  exit 1
fi
as_user=()
if [ "$(id -u)" = 0 ]; then
  user="${PG_CLUSTER_USER:-postgres}"
  id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  as_user=(runuser -u "$user" --)
fi
case "$action" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown "$user" "$dir" && chmod 0755 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      "${as_user[@]}" "$bindir/initdb" -D "$dir/data" -U admin --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1
    fi
    "${as_user[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c shared_buffers=32MB -c fsync=off -c max_connections=64" \
      start >/dev/null
    echo "postgresql://admin@/postgres?host=$dir"
    ;;
  stop)
    [ -f "$dir/data/postmaster.pid" ] && "${as_user[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  *) echo "usage: pg_cluster.sh start|stop DIR" >&2; exit 2 ;;
esac
