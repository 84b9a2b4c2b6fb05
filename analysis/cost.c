/*
 * cost.c - the cost model of cost.h.
 */
#include "cost.h"

#include <inttypes.h>
#include <stdio.h>

#include "rate.h"

double cost_route_latency(uint32_t hops)
{
	return ((double)(hops + 1) * COST_CABLE_LAT_NS + (double)hops * COST_SWITCH_LAT_NS) * 1e-9;
}

int cost_load_time(const struct route_tab *rt, const struct load *l, struct cost_time *out,
		   char err[AN_ERR_LEN])
{
	*out = (struct cost_time){ .link = UINT32_MAX };
	for (uint32_t i = 0; i < l->nlinks; i++) {
		const struct load_link *k = &l->links[i];
		if (!k->bytes)
			continue;
		uint64_t bps = rate_cable_bps(rt->snap, k->node, k->port);
		if (!bps) {
			snprintf(err, AN_ERR_LEN, "cable 0x%016" PRIx64 ":%u has no known rate",
				 rt->snap->nodes[k->node].guid, (unsigned)k->port);
			return AN_E_RANGE;
		}
		double t = (double)k->bytes * 8.0 / (double)bps;
		/* ties go to the first cable in (node, port) order: a stable answer */
		if (t > out->bw_seconds) {
			out->bw_seconds = t;
			out->link = i;
			out->link_bps = bps;
		}
	}
	if (out->link != UINT32_MAX)
		out->lat_seconds = cost_route_latency(l->max_hops);
	out->seconds = out->bw_seconds + out->lat_seconds;
	return AN_OK;
}
