#!/bin/sh
# The official postgres image's contract, for the test image: an empty $PGDATA is initialised with the
# superuser POSTGRES_USER (default postgres) whose password is POSTGRES_PASSWORD, and the database
# POSTGRES_DB (default the user's name) is created; then postgres runs as the postgres user, listening on
# every address with password authentication. Started as root it switches to the postgres user; started as
# that user already (a Kubernetes pod's runAsUser 999), it runs everything as it is.
set -eu

if [ "$(id -u)" = 0 ]; then
    as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
else
    as_postgres() { "$@"; }
fi

initialise() {
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "docker-entrypoint: POSTGRES_PASSWORD must be set to initialise $PGDATA" >&2
        exit 1
    fi
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    [ "$(id -u)" != 0 ] || chown postgres "$pwfile"
    # UTF8, as the official image (LANG=en_US.utf8); without a locale initdb would pick SQL_ASCII
    as_postgres initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --encoding=UTF8 --locale=C.UTF-8 \
        --auth-host=scram-sha-256 --pgdata="$PGDATA" > /dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        # listening on the socket only, so health checks see no server until it is ready
        as_postgres pg_ctl --pgdata="$PGDATA" --wait --silent -o "-c listen_addresses=''" start
        as_postgres createdb --username="$POSTGRES_USER" "$POSTGRES_DB"
        as_postgres pg_ctl --pgdata="$PGDATA" --wait --silent --mode=fast stop
    fi
}

: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
mkdir -p "$PGDATA" /var/run/postgresql
[ "$(id -u)" != 0 ] || chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ "$1" = postgres ]; then
    [ -s "$PGDATA/PG_VERSION" ] || initialise
    shift
    if [ "$(id -u)" = 0 ]; then
        exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
    fi
    exec postgres -D "$PGDATA" "$@"
fi
exec "$@"
