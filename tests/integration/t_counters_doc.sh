#!/usr/bin/env bash
# The counters are described once (topod/counters.c): docs/metrics.md must
# document every metric family with its HELP text, and docs/protocol.md's
# `stats` section every key of the reply.
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/lib/countertable.py build/bin/topod --check
