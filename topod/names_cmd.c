/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * names_cmd.c - `switches`: every switch's node GUID and name, the names
 * the hierarchy gives clusters (hier.h, "Names"), so that a client can put
 * a name next to every switch GUID it prints.
 */
#include <inttypes.h>

#include "cmd.h"
#include "hier.h"
#include "query.h"
#include "route.h"

void answer_switches(struct qctx *c)
{
	const struct route_tab *rt = c->rt;
	const struct hier *h = c->h;
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " switches=%u lines=%u\n", c->gen, rt->nsw, rt->nsw);
	for (uint32_t i = 0; i < rt->nsw; i++) {
		uint64_t guid = c->s->nodes[rt->sw_node[i]].guid;
		/* a hierarchy shared with an earlier generation has the same
		 * switches (fabric.h); anything else falls back to the GUID */
		if (h->swnames && h->nsw == rt->nsw)
			evbuffer_add_printf(c->out, "0x%016" PRIx64 " %s\n", guid, h->swnames[i]);
		else
			evbuffer_add_printf(c->out, "0x%016" PRIx64 " sw_%016" PRIx64 "\n", guid, guid);
	}
}
