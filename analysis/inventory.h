/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inventory.h - a fabric's ports and cables in infiniband-diags' words, for
 * `show` and `links` (docs/protocol.md): what iblinkinfo prints as
 * "4X QDR Active", from the PortInfo fields the snapshot keeps (snap_port:
 * state, width, speed, espeed; rate.h gives the data rate).
 *
 * Words: width "1X" "2X" "4X" "8X" "12X"; speed "SDR" "DDR" "QDR" "FDR"
 * "EDR" "HDR" (LinkSpeedExtActive first, as rate.h reads it); state "Down"
 * "Init" "Armed" "Active"; "?" for a code that is not one (a snapshot read
 * from text dumps has no state or rate).
 *
 * A cable's state is the lesser of its two ends' PortState, so a cable is
 * "Active" only when both ends are; it is up for routing (route.h) from
 * "Init" on.
 *
 * Pure: no I/O, no globals; the strings are static.
 */
#ifndef AN_INVENTORY_H
#define AN_INVENTORY_H

#include <stdint.h>

#include "route.h"
#include "snapshot.h"

/* "CA", "Switch", "Router" or "?". */
const char *inv_type_word(uint8_t type);

/* The lesser PortState of the cable on node's port (1..nports); 0 if the
 * port has no peer. */
uint8_t inv_cable_state(const struct snap *s, uint32_t node, unsigned port);

/* A state filter word to a test on a cable's two states: "down" (an end
 * below Init: the routes cannot use it), "init", "armed", "active" (the
 * cable's lesser state is that), "notactive" (an end below Active), "up"
 * (both ends at least Init). Returns the filter code (> 0) or AN_E_INVAL. */
int inv_state_filter(const char *word);
int inv_state_match(int filter, uint8_t state_a, uint8_t state_b);

/* The first end port of a node (a CA's lowest present port, a switch's
 * port 0), ROUTE_NONE if it has none. O(log eps). */
uint32_t inv_node_ep(const struct route_tab *rt, uint32_t node);

#endif
