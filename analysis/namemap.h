/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * namemap.h - names that two machines share.
 *
 * route.h makes every CA with one hostname a rail of that host, so that
 * multi-rail hosts are one host. Two CAs whose descriptions (after the
 * node-name-map) give the same hostname AND the same HCA label ("node1
 * HCA-1" twice) cannot be two rails of one machine: they are two machines
 * that were cloned, or not yet configured ("MT4123 ConnectX6 ..."). Merged,
 * `node1` would answer for whichever came first in node order and a job
 * on the other would get the wrong machine's routes, silently. So neither
 * keeps the name: each is named by its node GUID, as a CA without a valid
 * hostname is, and the administrator settles it in the node-name-map
 * (which is applied first, so a map entry for one of them ends the
 * ambiguity). Error convention: an_err.h.
 */
#ifndef AN_NAMEMAP_H
#define AN_NAMEMAP_H

#include <stdint.h>

#include "an_err.h"
#include "route.h"
#include "snapshot.h"

/*
 * The map to build s's routes with: base (may be NULL) plus, for every CA
 * whose hostname and HCA label another CA has too, an entry naming it by
 * its node GUID. *out is NULL when no CA is ambiguous (use base); else new
 * (route_namemap_free). *renamed counts the CAs renamed; example gets the
 * first shared "host label" (empty if none), for the log and stats.
 * O(CAs log CAs).
 */
int route_namemap_disambiguate(const struct snap *s, const struct route_namemap *base, struct route_namemap **out,
			       uint32_t *renamed, char example[AN_ERR_LEN], char err[AN_ERR_LEN]);

#endif
