#!/bin/sh
# ExecStopPost= of a systemd unit (see leaky.service): record the run that just ended in Flamewatch.
# Usage: record-exit.sh UNIT LABEL=VALUE...   systemd sets SERVICE_RESULT and EXIT_CODE (exited, killed, dumped).
set -eu
unit=$1; shift
case "${SERVICE_RESULT:-}" in
  oom-kill) kind=oom_kill ;;
  exit-code|signal|core-dump) kind=restart ;;
  *) exit 0 ;;  # a clean exit, or systemctl stop
esac
status=$(systemctl show -P ExecMainStatus "$unit")  # the exit code, or the signal that ended it
case "${EXIT_CODE:-exited}" in
  exited) code=$status ;;
  *) code=$((128 + status)) ;;  # as a shell reports a signal: SIGKILL is 137
esac
started=$(systemctl show -P ExecMainStartTimestamp --timestamp=unix "$unit")  # @1764134400 (systemd 248+)
limit=$(systemctl show -P MemoryMax "$unit")
case "$limit" in infinity) limit=0 ;; esac
labels=""
for label in "$@"; do labels="$labels --label $label"; done
# shellcheck disable=SC2086 # one word per label
exec flamewatch event --url "${FLAMEWATCH_URL:-http://127.0.0.1:8080}" --kind "$kind" --exit-code "$code" \
  --started "${started#@}" --memory-limit "$limit" --restart-count "$(systemctl show -P NRestarts "$unit")" \
  --key "$unit/${started#@}" $labels
