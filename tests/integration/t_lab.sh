#!/usr/bin/env bash
# The lab itself: every fabric kind loads in ibsim, routes under its OpenSM
# engine without fallback, matches ibnetdiscover, and teardown leaves nothing.
exec bash "$(dirname "$0")/../lab/test_lab.sh"
