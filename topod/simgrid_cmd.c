/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simgrid_cmd.c - `simgrid HOST ...`: the SimGrid platform of those hosts,
 * routes from the LFTs of the request's generation, links at the cables'
 * rates (analysis/simgrid.h). Heavy: every ordered pair is walked.
 *
 *   OK gen=G hosts=H links=L routes=R bytes=B lines=N
 *   <?xml version='1.0'?>
 *   ... N lines of XML in all
 *
 * `simgrid all`: every host of the fabric, routes by leaf zones
 * (simgrid_fabric):
 *
 *   OK gen=G hosts=H omitted=K zones=Z links=L routes=R bytes=B lines=N
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "simgrid.h"
#include "simgrid_cmd.h"
#include "topo_limits.h"

static const char *sg_code(int rc)
{
	return rc == AN_E_INVAL   ? "DUPLICATE"
	       : rc == AN_E_ROUTE ? "NOROUTE"
	       : rc == AN_E_RANGE ? "TOOMANY"
	       : rc == AN_E_NOMEM ? "NOMEM"
				  : "INTERNAL";
}

static void answer_fabric(struct qctx *c)
{
	struct tbuf xml = TBUF_INIT(TOPO_SIMGRID_ALL_BYTES_MAX);
	char err[AN_ERR_LEN] = "";
	struct simgrid_fabric_stats st;
	int rc = simgrid_fabric(c->rt, &xml, &st, err);
	if (rc) {
		query_error(c->out, sg_code(rc), "%s", err[0] ? err : an_strerror(rc));
	} else {
		evbuffer_add_printf(c->out,
				    "OK gen=%" PRIu64 " hosts=%u omitted=%u zones=%u links=%u routes=%u bytes=%zu lines=%u\n",
				    c->gen, st.hosts, st.omitted, st.zones, st.links, st.routes, xml.len, st.lines);
		evbuffer_add(c->out, xml.buf, xml.len);
	}
	tbuf_release(&xml);
}

/* A word and '=' is an option of another verb (bytes=, k=...), never a
 * hostname (RFC 1123): said as such rather than as an unknown host. */
static int is_option(const char *a)
{
	size_t n = strspn(a, "abcdefghijklmnopqrstuvwxyz");
	return n > 0 && a[n] == '=';
}

void answer_simgrid(struct qctx *c)
{
	const struct proto_req *r = c->req;
	for (size_t i = 0; i < r->argc; i++) {
		if (is_option(r->argv[i])) {
			query_error(c->out, "USAGE", "simgrid takes no options ('%.40s'): a platform is the links' "
				    "rates and latencies, the job's messages give their own sizes", r->argv[i]);
			return;
		}
	}
	if (!strcmp(r->argv[0], "all")) {
		if (r->argc == 1)
			answer_fabric(c);
		else
			query_error(c->out, "USAGE", "'all' stands alone (simgrid all); a host named all is asked for "
				    "by its host/HCA or GUID name");
		return;
	}
	if (r->argc > TOPO_SIMGRID_HOSTS_MAX) {
		query_error(c->out, "TOOMANY", "a platform takes at most %d hosts", TOPO_SIMGRID_HOSTS_MAX);
		return;
	}
	uint32_t *hosts = malloc(r->argc * sizeof(*hosts));
	if (!hosts) {
		query_error(c->out, "NOMEM", "no memory for %zu hosts", r->argc);
		return;
	}
	struct tbuf xml = TBUF_INIT(TOPO_SIMGRID_BYTES_MAX);
	for (size_t i = 0; i < r->argc; i++) {
		/* A platform host sends on its default rail, as the job would. */
		int64_t h = qctx_host_of(c, r->argv[i]);
		if (h < 0)
			goto out;
		hosts[i] = (uint32_t)h;
	}
	char err[AN_ERR_LEN] = "";
	struct simgrid_stats st;
	int rc = simgrid_platform(c->rt, hosts, r->argc, &xml, &st, err);
	if (rc) {
		query_error(c->out, sg_code(rc), "%s", err[0] ? err : an_strerror(rc));
		goto out;
	}
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " hosts=%u links=%u routes=%u bytes=%zu lines=%u\n", c->gen,
			    st.hosts, st.links, st.routes, xml.len, st.lines);
	evbuffer_add(c->out, xml.buf, xml.len);
out:
	tbuf_release(&xml);
	free(hosts);
}
