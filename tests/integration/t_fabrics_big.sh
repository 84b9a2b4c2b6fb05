#!/usr/bin/env bash
# t_fabrics.sh's big fabric alone: a k=24 fat tree of 3,456 hosts through
# ibsim, OpenSM's ftree and the plugin, checked against ibnetdiscover,
# ibroute, topo-collect and ibtracert (see t_fabrics.sh).
TOPOD_FABRICS=big exec bash "$(dirname "$0")/t_fabrics.sh"
