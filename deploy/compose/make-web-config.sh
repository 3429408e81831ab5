#!/usr/bin/env bash
# Makes the directory deploy/compose/secure.yml mounts into every Flamewatch service and Grafana: a CA, a
# server certificate for the compose service names, passwords and tokens (each in its own file), and the
# web configuration file web.yml that names them; then writes FLAMEWATCH_WEB_DIR and FLAMEWATCH_WEB_GID
# into the checkout's .env (or FLAMEWATCH_ENV_FILE), which docker compose reads.
#
#   deploy/compose/make-web-config.sh [DIR] [NAME...]
#
# DIR: where (default deploy/compose/web; refused when it holds a web.yml already). NAME: more host names
# the server certificate carries, e.g. the one browsers and SDKs reach this machine by (localhost and
# 127.0.0.1 are always in). Needs openssl 1.1.1 or later and, for the bcrypt hashes of the passwords,
# `flamewatch` on PATH or its image (FLAMEWATCH_IMAGE, default flamewatch:latest: `docker compose build`).
#
# Users it makes: admin (password in admin.password; reads and writes every tenant, admin), grafana
# (grafana.password; reads every tenant); tokens: agent (agent.token; writes tenant anonymous, for SDKs
# and agents), flamewatch (flamewatch.token; the services' own). The CA's key is not kept: run the script
# again into a new directory for new certificates. Secrets are written to files, never printed.
set -euo pipefail

checkout=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$checkout/deploy/compose/web}
shift $(($# > 0 ? 1 : 0))
services=(ingester querier symbolizer collector frontend)

if [[ -e $dir/web.yml ]]; then
  echo "$dir/web.yml exists: remove the directory or name another one" >&2
  exit 1
fi
command -v openssl > /dev/null || { echo "openssl is missing: install it (Debian: apt-get install openssl)" >&2; exit 1; }

flamewatch_cli() {
  if command -v flamewatch > /dev/null; then
    flamewatch "$@"
  else
    docker run --rm -i --network none "${FLAMEWATCH_IMAGE:-flamewatch:latest}" "$@"
  fi
}

umask 027  # the files are for their owner and group: the containers join the group (FLAMEWATCH_WEB_GID)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sans="DNS:localhost,IP:127.0.0.1"
for name in "${services[@]}" "$@"; do sans="$sans,DNS:$name"; done
cat > "$work/openssl.cnf" <<EOF
[req]
distinguished_name = subject
prompt = no
[subject]
CN = Flamewatch compose CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = $sans
EOF
key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 -config "$work/openssl.cnf" -extensions ca "${key[@]}" -keyout "$work/ca.key" \
  -out "$dir/ca.crt" -days 825 2> /dev/null
openssl req -new -config "$work/openssl.cnf" "${key[@]}" -subj "/CN=flamewatch" -keyout "$dir/server.key" \
  -out "$work/server.csr" 2> /dev/null
openssl x509 -req -in "$work/server.csr" -CA "$dir/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -CAserial "$work/ca.srl" -days 825 -extfile "$work/openssl.cnf" -extensions server -out "$dir/server.crt" 2> /dev/null

# Secrets without a trailing newline: Grafana's $__file{} and Flamewatch's *_file read them as they are.
for name in admin grafana; do openssl rand -hex 16 | tr -d '\n' > "$dir/$name.password"; done
for name in agent flamewatch; do openssl rand -hex 32 | tr -d '\n' > "$dir/$name.token"; done
hash_password() { flamewatch_cli web hash-password < "$dir/$1.password"; }
hash_token() { printf 'sha256:%s' "$(openssl dgst -sha256 -r < "$dir/$1.token" | cut -d' ' -f1)"; }

cat > "$dir/web.yml" <<EOF
# Made by deploy/compose/make-web-config.sh; README, Security, describes every field.
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  admin: $(hash_password admin)
  grafana: $(hash_password grafana)
bearer_tokens:
  agent: $(hash_token agent)
  flamewatch: $(hash_token flamewatch)
access:
  admin: {read: ["*"], write: ["*"], admin: true}
  grafana: {read: ["*"]}
  agent: {write: [anonymous]}
  flamewatch: {read: ["*"], write: ["*"], admin: true}
client:
  authorization: {credentials_file: flamewatch.token}
  tls_config: {ca_file: ca.crt}
EOF
chmod g+r "$dir/server.key"  # openssl writes keys for their owner alone
chgrp -R "$(id -g)" "$dir"

env_file=${FLAMEWATCH_ENV_FILE:-$checkout/.env}
touch "$env_file"
grep -v -e '^FLAMEWATCH_WEB_DIR=' -e '^FLAMEWATCH_WEB_GID=' "$env_file" > "$work/env" || true
printf 'FLAMEWATCH_WEB_DIR=%s\nFLAMEWATCH_WEB_GID=%s\n' "$dir" "$(id -g)" >> "$work/env"
cat "$work/env" > "$env_file"

cat <<EOF
made $dir: web.yml, ca.crt, server.crt and .key (for ${sans//DNS:/}),
  admin.password, grafana.password, agent.token, flamewatch.token
wrote FLAMEWATCH_WEB_DIR and FLAMEWATCH_WEB_GID into $env_file
next: docker compose -f docker-compose.yml -f deploy/compose/secure.yml up -d
EOF
