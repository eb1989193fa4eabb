#!/bin/sh
# The official image's redis-server answers on the container network without a password (its own build
# turns protected mode off); Debian's keeps it on, so say so here. Other commands run as given.
set -eu
if [ "${1:-}" = redis-server ]; then
  exec "$@" --protected-mode no
fi
exec "$@"
