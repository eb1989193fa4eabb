#!/bin/sh
# First start on an empty volume: a cluster owned by POSTGRES_USER with POSTGRES_PASSWORD (scram over TCP)
# and the database POSTGRES_DB, as the official image makes them. Later starts reuse it.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user="${POSTGRES_USER:-postgres}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  secret=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$secret"
  initdb -D "$PGDATA" -U "$user" --pwfile="$secret" -E UTF8 --auth-local=trust --auth-host=scram-sha-256
  rm -f "$secret"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then
    createdb -U "$user" "$POSTGRES_DB"
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
