/*
 * test_simgrid_fabric.c - the whole-fabric SimGrid platform
 * (analysis/simgrid.h, simgrid_fabric): for every ordered pair of its hosts,
 * the route SimGrid's hierarchical routing composes (source -> o:S, the
 * zone route, i:Z:S -> destination; or the zone's own route between
 * leaf-mates) must be, link for link, the route simgrid_platform() writes
 * for that pair, which test_simgrid checks against the LFTs. Also: hosts
 * whose port is down are left out and counted, and the byte limit holds.
 */
#include <inttypes.h>

#include "simgrid.h"
#include "testfab.h"
#include "topo_limits.h"

#define MAXR 4096
#define MAXL 512

struct doc {
	char link[MAXL][32];     /* l:N -> "0xGUID:PORT" */
	char src[MAXR][48], dst[MAXR][48];
	char *links[MAXR];       /* the route's link ids, ' '-separated, translated */
	char zone_of_host[64][48];
	char host[64][48];
	size_t nr, nh;
	size_t zoneroutes, glue_ok;
};

/* The value of attribute a in the element at p (up to its '>'), or "". */
static void attr(const char *p, const char *a, char *out, size_t n)
{
	char key[32];
	snprintf(key, sizeof(key), " %s=\"", a);
	const char *end = strchr(p, '>'), *k = strstr(p, key);
	out[0] = '\0';
	if (!k || (end && k > end))
		return;
	k += strlen(key);
	size_t m = (size_t)(strchr(k, '"') - k);
	snprintf(out, n, "%.*s", (int)(m < n ? m : n - 1), k);
}

/* The link_ctn ids of a route line, translated to their port names. */
static char *route_links(struct doc *d, const char *line)
{
	char *acc = calloc(1, 4096), id[32];
	for (const char *p = strstr(line, "<link_ctn "); p; p = strstr(p + 1, "<link_ctn ")) {
		attr(p, "id", id, sizeof(id));
		const char *name = id;
		if (!strncmp(id, "l:", 2) && (size_t)atoi(id + 2) < MAXL)
			name = d->link[atoi(id + 2)];
		strcat(acc, name);
		strcat(acc, " ");
	}
	return acc;
}

static void parse(struct doc *d, char *xml)
{
	char zone[48] = "", v[48];
	for (char *line = strtok(xml, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strncmp(line, "<zone ", 6)) {
			attr(line, "id", zone, sizeof(zone));
		} else if (!strncmp(line, "<link id=\"l:", 12)) {
			attr(line, "id", v, sizeof(v));
			char port[32];
			attr(strstr(line, "<prop "), "value", port, sizeof(port));
			if ((size_t)atoi(v + 2) < MAXL)
				snprintf(d->link[atoi(v + 2)], 32, "%s", port);
		} else if (!strncmp(line, "<host ", 6) && d->nh < 64) {
			attr(line, "id", d->host[d->nh], 48);
			snprintf(d->zone_of_host[d->nh++], 48, "%s", zone);
		} else if (!strncmp(line, "<route ", 7) && d->nr < MAXR) {
			attr(line, "src", d->src[d->nr], 48);
			attr(line, "dst", d->dst[d->nr], 48);
			d->links[d->nr++] = route_links(d, line);
		} else if (!strncmp(line, "<zoneRoute ", 11)) {
			char s[48], z[48], gs[48], gd[48], want[128];
			attr(line, "src", s, sizeof(s));
			attr(line, "dst", z, sizeof(z));
			attr(line, "gw_src", gs, sizeof(gs));
			attr(line, "gw_dst", gd, sizeof(gd));
			snprintf(want, sizeof(want), "i:%s:%s", z + 2, s + 2);
			d->zoneroutes++;
			d->glue_ok += !strcmp(gs + 2, s + 2) && gs[0] == 'o' && !strcmp(gd, want) &&
				      strstr(line, "<link_ctn id=\"glue\"/></zoneRoute>") != NULL;
		}
	}
}

static const char *find_route(const struct doc *d, const char *src, const char *dst)
{
	for (size_t r = 0; r < d->nr; r++)
		if (!strcmp(d->src[r], src) && !strcmp(d->dst[r], dst))
			return d->links[r];
	return NULL;
}

static const char *zone_of(const struct doc *d, const char *h)
{
	for (size_t i = 0; i < d->nh; i++)
		if (!strcmp(d->host[i], h))
			return d->zone_of_host[i];
	return NULL;
}

/* The route SimGrid composes for a -> b, as port names, into buf. */
static int composed(const struct doc *d, const char *a, const char *b, char *buf, size_t n)
{
	const char *za = zone_of(d, a), *zb = zone_of(d, b);
	if (!za || !zb)
		return -1;
	if (!strcmp(za, zb)) {
		const char *r = find_route(d, a, b);
		return r ? (snprintf(buf, n, "%s", r), 0) : -1;
	}
	char out[48], in[64];
	snprintf(out, sizeof(out), "o:%s", za + 2);
	snprintf(in, sizeof(in), "i:%s:%s", zb + 2, za + 2);
	const char *r1 = find_route(d, a, out), *r2 = find_route(d, in, b);
	return r1 && r2 ? (snprintf(buf, n, "%s%s", r1, r2), 0) : -1;
}

int main(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 3, 2, 1);
	tf_finish(s, 0);
	int64_t h0 = snap_find_node(s, TF_CA_GUID + 16 * 1), h5 = snap_find_node(s, TF_CA_GUID + 16 * 21);
	if (h0 < 0 || h5 < 0)
		tf_die("hosts");
	tf_cable_width(s, (uint32_t)h0, 1, 1);
	tf_link_down(s, (uint32_t)h5, 1);
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	struct tbuf xml = TBUF_INIT(0), job = TBUF_INIT(0);
	struct simgrid_fabric_stats st;
	char err[AN_ERR_LEN] = "";
	int rc = simgrid_fabric(rt, &xml, &st, err);
	CHECK(rc == AN_OK, "the whole fabric: %s", err);
	CHECK(st.hosts == 11 && st.omitted == 1 && st.zones == 4,
	      "11 hosts in 4 leaf zones, h0005 (cable down) left out: %u, %u, %u", st.hosts, st.omitted, st.zones);
	size_t lines = 0;
	for (size_t k = 0; k < xml.len; k++)
		lines += xml.buf[k] == '\n';
	CHECK(lines == st.lines && xml.len && xml.buf[xml.len - 1] == '\n' &&
		      strstr(xml.buf, "</zone>\n</platform>\n") == xml.buf + xml.len - 20,
	      "the document ends its last line, and has the lines it counts (%zu)", lines);
	/* The same hosts through the per-job export. */
	uint32_t hosts[16], n = 0;
	for (uint32_t h = 0; h < rt->nhosts; h++)
		if (strcmp(rt->hosts[h].name, "h0005"))
			hosts[n++] = h;
	rc = simgrid_platform(rt, hosts, n, &job, NULL, err);
	CHECK(rc == AN_OK, "the per-job platform of the same %u hosts: %s", n, err);
	CHECK(strstr(xml.buf, "bandwidth=\"8000000000bps\" latency=\"100ns\" sharing_policy=\"SHARED\">"
			      "<prop id=\"port\" value=\"0x0002c90300000010:1\"/>") != NULL,
	      "h0000's 1x cable keeps its rate (8 Gb/s) and names its port");
	static struct doc dx, dj;
	parse(&dx, xml.buf);
	parse(&dj, job.buf);
	CHECK(dx.zoneroutes == 12 && dx.glue_ok == 12,
	      "a zone route for each of the 12 ordered zone pairs, o:S to i:Z:S through the glue link (%zu, %zu)",
	      dx.zoneroutes, dx.glue_ok);
	size_t pairs = 0, same = 0, cross = 0;
	char buf[4096];
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++) {
			if (i == j)
				continue;
			const char *a = rt->hosts[hosts[i]].name, *b = rt->hosts[hosts[j]].name;
			const char *want = find_route(&dj, a, b);
			pairs++;
			if (want && !composed(&dx, a, b, buf, sizeof(buf)) && !strcmp(buf, want)) {
				same++;
				cross += strcmp(zone_of(&dx, a), zone_of(&dx, b)) != 0;
			} else if (same + 1 == pairs) {
				printf("# %s -> %s: %s, want %s\n", a, b, buf, want ? want : "-");
			}
		}
	/* leaf-mates: 3 leaves of 3 hosts, one of 2 (h0005 left out) */
	CHECK(pairs == 110 && same == pairs && cross == 110 - (3 * 3 * 2 + 2 * 1),
	      "every ordered pair's composed route is the per-job LFT route, link for link (%zu of %zu, %zu across "
	      "zones)", same, pairs, cross);
	/* A caller's buffer smaller than the platform: the limit, nothing kept. */
	struct tbuf small = TBUF_INIT(2000);
	tbuf_add(&small, "x", 1);
	err[0] = '\0';
	rc = simgrid_fabric(rt, &small, &st, err);
	CHECK(rc == AN_E_RANGE && small.len == 1 && strstr(err, "TOPO_SIMGRID_ALL_BYTES_MAX"),
	      "a platform past the bytes allowed is refused, naming the limit, the buffer as it was: %s", err);
	tbuf_release(&small);
	for (size_t r = 0; r < dx.nr; r++)
		free(dx.links[r]);
	for (size_t r = 0; r < dj.nr; r++)
		free(dj.links[r]);
	tbuf_release(&xml);
	tbuf_release(&job);
	route_free(rt);
	snap_free(s);
	return tf_failures != 0;
}
