/*
 * test_simgrid.c - link rates from PortInfo codes (analysis/rate.h), and the
 * SimGrid platform export (analysis/simgrid.h): its routes against an
 * independent walk of the LFTs, its rates and latencies, and its refusals.
 */
#include <inttypes.h>

#include "rate.h"
#include "simgrid.h"
#include "testfab.h"
#include "topo_limits.h"

static void test_rates(void)
{
	struct snap_port p = { .width = 1, .speed = 1 };
	CHECK(rate_port_bps(&p) == 2000000000ull, "1x SDR carries 2 Gb/s of data (8b/10b)");
	p.width = 2, p.speed = 4;
	CHECK(rate_port_bps(&p) == 32000000000ull, "4x QDR carries 32 Gb/s");
	p.width = 8, p.speed = 2;
	CHECK(rate_port_bps(&p) == 48000000000ull, "12x DDR carries 48 Gb/s");
	p.width = 2, p.speed = 4, p.espeed = 2;
	CHECK(rate_port_bps(&p) == 100000000000ull, "4x EDR (extended speed overrides QDR) carries 100 Gb/s (64b/66b)");
	p.espeed = 1;
	CHECK(rate_port_bps(&p) == 4 * (14062500000ull * 64 / 66), "4x FDR carries 4 x 14.0625 x 64/66 Gb/s");
	p.width = 16, p.espeed = 4;
	CHECK(rate_port_bps(&p) == 2 * (53125000000ull * 64 / 66), "2x HDR carries 2 x 53.125 x 64/66 Gb/s");
	p.width = 3;
	CHECK(rate_port_bps(&p) == 0, "a width code that is no width has no rate");
	p.width = 2, p.speed = 0, p.espeed = 0;
	CHECK(rate_port_bps(&p) == 0, "no speed, no rate");
	p.speed = 4, p.espeed = 8;
	CHECK(rate_port_bps(&p) == 0, "an unknown extended speed is not mistaken for the old field");
}

/* 2 leaves x 2 hosts, 2 spines; h0000's cable is 1x at both ends. */
static struct snap *fabric(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 2, 2, 2, 1);
	tf_finish(s, 0);
	int64_t h0 = snap_find_node(s, TF_CA_GUID + 16 * 1);
	if (h0 < 0)
		tf_die("h0000");
	tf_cable_width(s, (uint32_t)h0, 1, 1);
	return s;
}

/* The route line as an independent walk of the LFTs gives it. */
static void ref_route(const struct snap *s, const struct route_tab *rt, uint32_t hs, uint32_t hd, char *buf, size_t n)
{
	const struct route_ep *a = &rt->eps[route_host_ep(rt, hs)], *b = &rt->eps[route_host_ep(rt, hd)];
	size_t o = (size_t)snprintf(buf, n, "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">", rt->hosts[hs].name,
				    rt->hosts[hd].name);
	uint32_t node = a->node;
	unsigned port = a->port;
	for (int guard = 0; guard < 16; guard++) {
		o += (size_t)snprintf(buf + o, n - o, "<link_ctn id=\"0x%016" PRIx64 ":%u\"/>", s->nodes[node].guid, port);
		const struct snap_port *pt = &s->ports[s->nodes[node].port0 + port];
		node = pt->peer_node;
		if (s->nodes[node].type != SNAP_NODE_SWITCH)
			break;
		port = snap_lft_get(&s->nodes[node], b->lid);
	}
	snprintf(buf + o, n - o, "</route>\n");
}

static void test_platform(void)
{
	struct snap *s = fabric();
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	uint32_t hosts[4];
	char err[AN_ERR_LEN] = "", line[2048];
	for (uint32_t i = 0; i < 4; i++)
		hosts[i] = i;
	struct tbuf out = TBUF_INIT(0);
	struct simgrid_stats st;
	int rc = simgrid_platform(rt, hosts, 4, &out, &st, err);
	CHECK(rc == AN_OK, "platform of 4 hosts: %s", rc ? err : "ok");
	CHECK(st.hosts == 4 && st.routes == 12, "4 hosts, 12 routes (every ordered pair)");
	/* 4 host cables both ways (8) + 2 leaf-spine cables per leaf both ways (8) */
	CHECK(st.links == 16, "16 directed links used (got %u)", st.links);
	size_t nl = 0;
	for (size_t k = 0; k < out.len; k++)
		nl += out.buf[k] == '\n';
	CHECK(st.lines == nl && nl == 10 + 4 + 16 + 12 + 2, "lines counted: %u", st.lines);
	int same = 1;
	for (uint32_t i = 0; i < 4; i++)
		for (uint32_t j = 0; j < 4; j++) {
			if (i == j)
				continue;
			ref_route(s, rt, i, j, line, sizeof(line));
			if (!strstr(out.buf, line)) {
				same = 0;
				printf("# missing: %s", line);
			}
		}
	CHECK(same, "every route lists the directed cables of the LFT walk, in order");
	CHECK(strstr(out.buf, ":1\" bandwidth=\"8000000000bps\" latency=\"100ns\"") != NULL,
	      "h0000's 1x QDR cable: 8 Gb/s, cable latency only from the host");
	CHECK(strstr(out.buf, "bandwidth=\"32000000000bps\" latency=\"200ns\"") != NULL,
	      "4x QDR switch links: 32 Gb/s, cable + switch latency");
	CHECK(strstr(out.buf, "<prop id=\"network/optim\" value=\"Full\"/>") &&
		      strstr(out.buf, "<prop id=\"network/solver\" value=\"fairbottleneck\"/>") &&
		      strstr(out.buf, "<prop id=\"network/crosstraffic\" value=\"0\"/>"),
	      "the platform carries the sharing settings");
	CHECK(strstr(out.buf, "<host id=\"h0003\" speed=\"" SIMGRID_HOST_SPEED "\"/>") != NULL, "hosts by name");
	CHECK(!strncmp(out.buf + out.len - 20, "</zone>\n</platform>\n", 20), "closed");
	tbuf_release(&out);

	uint32_t dup[3] = { 0, 2, 0 };
	rc = simgrid_platform(rt, dup, 3, &out, NULL, err);
	CHECK(rc == AN_E_INVAL && strstr(err, "h0000"), "a host listed twice is refused by name: %s", err);
	uint32_t many[TOPO_SIMGRID_HOSTS_MAX + 1] = { 0 };
	CHECK(simgrid_platform(rt, many, TOPO_SIMGRID_HOSTS_MAX + 1, &out, NULL, err) == AN_E_RANGE,
	      "more than %d hosts: RANGE", TOPO_SIMGRID_HOSTS_MAX);
	CHECK(simgrid_platform(rt, hosts, 0, &out, NULL, err) == AN_E_RANGE, "no hosts: RANGE");
	struct tbuf small = TBUF_INIT(1000);
	tbuf_add(&small, "x", 1);
	rc = simgrid_platform(rt, hosts, 4, &small, NULL, err);
	CHECK(rc == AN_E_RANGE && small.len == 1 && !strcmp(small.buf, "x"),
	      "a buffer bound is kept and the buffer left as it was: %s", err);
	tbuf_release(&small);

	/* No rate on h0003's cable: the export must not invent one. */
	int64_t h3 = snap_find_node(s, TF_CA_GUID + 16 * 13);
	s->ports[s->nodes[h3].port0 + 1].width = 0;
	rc = simgrid_platform(rt, hosts, 4, &out, NULL, err);
	CHECK(rc == AN_E_ROUTE && strstr(err, "h0003") && strstr(err, "rate"), "a cable without rate: %s", err);
	s->ports[s->nodes[h3].port0 + 1].width = 2;
	/* Break the route to h0003 at its leaf. */
	uint16_t lid3 = rt->eps[route_host_ep(rt, 3)].lid;
	uint32_t leaf = s->ports[s->nodes[h3].port0 + 1].peer_node;
	*tf_lft_at(s, leaf, lid3) = SNAP_LFT_NONE;
	rc = simgrid_platform(rt, hosts, 4, &out, NULL, err);
	CHECK(rc == AN_E_ROUTE && strstr(err, "to h0003") && strstr(err, "from h0"), "a failing route names the pair: %s",
	      err);
	CHECK(out.len == 0, "nothing written on error");
	tbuf_release(&out);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	test_rates();
	test_platform();
	return tf_failures != 0;
}
