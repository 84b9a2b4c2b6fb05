/*
 * fabric.c - see fabric.h.
 */
#include "fabric.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fabric_index *fabric_index_build(const struct snap *s, int threads, char err[SNAP_ERR_LEN])
{
	struct fabric_index *x = calloc(1, sizeof(*x));
	if (!x) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		x->switches += n->type == SNAP_NODE_SWITCH;
		x->cas += n->type == SNAP_NODE_CA;
		x->routers += n->type == SNAP_NODE_ROUTER;
		for (unsigned p = 1; p <= n->nports; p++) {
			const struct snap_port *pt = &s->ports[n->port0 + p];
			if (pt->peer_node != SNAP_NONE &&
			    (pt->peer_node > i || (pt->peer_node == i && pt->peer_port > p)))
				x->links++;
		}
	}
	return x;
}

void fabric_index_free(struct fabric_index *x)
{
	free(x);
}
