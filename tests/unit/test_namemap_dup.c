/*
 * test_namemap_dup.c - names two machines share (analysis/namemap.h): two
 * CAs with one hostname AND one HCA label are two machines, each named by
 * its node GUID; different labels stay rails of one host; the admin's
 * node-name-map is applied first and kept.
 */
#include "namemap.h"
#include "route.h"
#include "testfab.h"

#include <stdio.h>
#include <string.h>

static int has_host(const struct route_tab *rt, const char *n)
{
	uint32_t h;
	return !route_find_host(rt, n, &h);
}

static const char *guid_name(uint64_t id, char buf[24])
{
	snprintf(buf, 24, "0x%016llx", (unsigned long long)(TF_CA_GUID + 16 * id));
	return buf;
}

int main(void)
{
	struct snap *s = snap_new();
	uint32_t sw = tf_switch(s, 1, 40);
	const char *descs[] = { "dup HCA-1", "dup HCA-1", "rail HCA-1", "rail HCA-2", "nohca", "nohca",
				"bad\x01 HCA-1", "bad\x01 HCA-1", "tri mlx5_0", "tri mlx5_0", "tri mlx5_0",
				"fixed HCA-1", "fixed HCA-1", "0x12 HCA-1", "0x12 HCA-1" };
	unsigned nd = sizeof(descs) / sizeof(descs[0]), port = 1;
	for (unsigned i = 0; i < nd; i++)
		tf_link(s, tf_ca(s, 100 + i, 1, descs[i]), 1, sw, port++);
	uint64_t sw_guid = s->nodes[sw].guid;   /* tf_finish sorts the nodes */
	tf_finish(s, 0);

	/* The admin names one of the "fixed" pair (id 112), and a switch. */
	char g[24], text[200];
	snprintf(text, sizeof(text), "%s \"fixed2 HCA-1\"\n0x%016llx \"a-switch\"\n", guid_name(112, g),
		 (unsigned long long)sw_guid);
	struct route_namemap *base = NULL, *m = NULL;
	char err[AN_ERR_LEN] = "", ex[AN_ERR_LEN];
	CHECK(!route_namemap_parse(text, strlen(text), &base, err), "the admin's map parses: %s", err);
	uint32_t n = 99;
	int rc = route_namemap_disambiguate(s, base, &m, &n, ex, err);
	CHECK(rc == AN_OK && m && n == 5 && !strcmp(ex, "dup HCA-1"),
	      "two 'dup HCA-1' and three 'tri mlx5_0': 5 renamed, first '%s' (rc %d, %u)", ex, rc, n);
	for (unsigned i = 0; i < nd; i++) {
		const char *v = route_namemap_get(m, TF_CA_GUID + 16 * (100 + i));
		int renamed = i <= 1 || (i >= 8 && i <= 10);
		CHECK(renamed ? v && !strcmp(v, guid_name(100 + i, g)) : i == 12 ? v && !strcmp(v, "fixed2 HCA-1") : !v,
		      "CA %u (\"%s\"): %s", i, descs[i][0] == 'b' ? "bad..." : descs[i], v ? v : "(no entry)");
	}
	CHECK(route_namemap_get(m, sw_guid) && !strcmp(route_namemap_get(m, sw_guid), "a-switch"),
	      "the admin's other entries are kept");

	struct route_tab *rt = NULL;
	CHECK(!route_build(s, m, &rt), "routes build with the map");
	uint32_t h;
	CHECK(!has_host(rt, "dup") && !has_host(rt, "tri") && has_host(rt, guid_name(100, g)) &&
		      has_host(rt, guid_name(101, g)) && has_host(rt, guid_name(110, g)),
	      "the shared names answer for no machine; each machine is a host of its GUID");
	CHECK(!route_find_host(rt, "rail", &h) && rt->hosts[h].nrails == 2, "'rail HCA-1' and 'rail HCA-2': one host, two rails");
	CHECK(!route_find_host(rt, "nohca", &h) && rt->hosts[h].nrails == 2,
	      "two 'nohca' without a label: rails of one host, as route.h says (no label to tell them apart)");
	CHECK(has_host(rt, "fixed") && has_host(rt, "fixed2"), "the admin's map entry settles the 'fixed' pair");
	route_free(rt);
	route_namemap_free(m);

	/* Nothing shared: no map of its own. */
	struct snap *t = snap_new();
	sw = tf_switch(t, 1, 8);
	tf_link(t, tf_ca(t, 1, 1, "a HCA-1"), 1, sw, 1);
	tf_link(t, tf_ca(t, 2, 1, "a HCA-2"), 1, sw, 2);
	tf_link(t, tf_ca(t, 3, 1, "b HCA-1"), 1, sw, 3);
	tf_finish(t, 0);
	m = (struct route_namemap *)1;
	rc = route_namemap_disambiguate(t, NULL, &m, &n, ex, err);
	CHECK(rc == AN_OK && !m && n == 0 && !ex[0], "no shared host and label: no map, nothing renamed");
	route_namemap_free(base);
	snap_free(t);
	snap_free(s);
	return tf_failures != 0;
}
