#!/usr/bin/env bash
# Runs a command that must fail: exit 0 only when it exits non-zero (not by a signal) and its
# stderr matches the extended regular expression given first. For ctests of bad input.
# Usage: scripts/expect-fail.sh REGEX COMMAND [ARGS...]
set -uo pipefail
regex=$1
shift
err=$("$@" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ]; then
  echo "expected a clean failure, got exit $rc from: $*" >&2
  echo "$err" >&2
  exit 1
fi
if ! grep -Eq -- "$regex" <<<"$err"; then
  echo "stderr does not match /$regex/:" >&2
  echo "$err" >&2
  exit 1
fi
echo "refused as expected (exit $rc): $err"
