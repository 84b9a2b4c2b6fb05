/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inventory.c - see inventory.h.
 */
#include "inventory.h"

#include <string.h>

const char *inv_type_word(uint8_t type)
{
	switch (type) {
	case SNAP_NODE_CA: return "CA";
	case SNAP_NODE_SWITCH: return "Switch";
	case SNAP_NODE_ROUTER: return "Router";
	default: return "?";
	}
}

uint8_t inv_cable_state(const struct snap *s, uint32_t node, unsigned port)
{
	const struct snap_port *p = &s->ports[s->nodes[node].port0 + port];
	if (p->peer_node == SNAP_NONE)
		return 0;
	const struct snap_port *q = &s->ports[s->nodes[p->peer_node].port0 + p->peer_port];
	return p->state < q->state ? p->state : q->state;
}

enum { F_DOWN = 1, F_INIT, F_ARMED, F_ACTIVE, F_NOTACTIVE, F_UP };

int inv_state_filter(const char *w)
{
	static const char *const words[] = { "down", "init", "armed", "active", "notactive", "up" };
	for (int i = 0; i < 6; i++)
		if (!strcmp(w, words[i]))
			return i + 1;
	return AN_E_INVAL;
}

int inv_state_match(int filter, uint8_t a, uint8_t b)
{
	uint8_t lo = a < b ? a : b;
	switch (filter) {
	case F_DOWN: return lo < SNAP_PORT_INIT;
	case F_INIT: return lo == SNAP_PORT_INIT;
	case F_ARMED: return lo == SNAP_PORT_ARMED;
	case F_ACTIVE: return lo == SNAP_PORT_ACTIVE;
	case F_NOTACTIVE: return lo != SNAP_PORT_ACTIVE;
	case F_UP: return lo >= SNAP_PORT_INIT;
	default: return 1;
	}
}

uint32_t inv_node_ep(const struct route_tab *rt, uint32_t node)
{
	/* eps are in node order, then port order: the first of the node's */
	uint32_t lo = 0, hi = rt->neps;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (rt->eps[mid].node < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rt->neps && rt->eps[lo].node == node ? lo : ROUTE_NONE;
}
