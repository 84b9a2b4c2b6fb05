#!/usr/bin/env bash
# Issue 7's attack drill (tests/drill/attack.py): every attack, one line each.
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/drill/attack.py
