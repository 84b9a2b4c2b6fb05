#!/usr/bin/env bash
# test: serial - attacks 21.9/21.10 assert a hopsmatrix within 100 ms while route schedules hold both
# workers, and eight 4,096-rank schedules answered OK before the heavy timeout
# Issue 7's attack drill (tests/drill/attack.py): every attack, one line each.
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/drill/attack.py
