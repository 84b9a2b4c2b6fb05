#!/usr/bin/env bash
# The protocol is named once (topod's command table): docs/protocol.md's
# command list and sections must match it.
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/lib/cmdtable.py build/bin/topod --check
