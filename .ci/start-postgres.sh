#!/usr/bin/env bash
# Starts PostgreSQL on loopback with the role and database the store tests use.
# Idempotent; runs as root on Debian. Installs Debian's `postgresql` when missing.
set -euo pipefail

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$ver main"; then
  pg_createcluster "$ver" main >/dev/null
fi

# Loopback only: the test database has a well-known password.
conf_dir=/etc/postgresql/$ver/main/conf.d
mkdir -p "$conf_dir"
echo "listen_addresses = '127.0.0.1'" > "$conf_dir/passdown-ci.conf"
port=$(pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $3}')

if ! pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $4}' | grep -q online; then
  pg_ctlcluster "$ver" main start
fi
for _ in $(seq 1 60); do
  pg_isready -q -h 127.0.0.1 -p "$port" && break
  sleep 0.5
done
pg_isready -h 127.0.0.1 -p "$port"

psql_admin() { runuser -u postgres -- psql -v ON_ERROR_STOP=1 -q -p "$port" "$@"; }
psql_admin <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'passdown') THEN
    CREATE ROLE passdown LOGIN PASSWORD 'passdown';
  ELSE
    ALTER ROLE passdown LOGIN PASSWORD 'passdown';
  END IF;
END $$;
SELECT 'CREATE DATABASE passdown_test OWNER passdown'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'passdown_test')\gexec
SQL
echo "postgresql $ver on 127.0.0.1:$port, database passdown_test ready"
