/*
 * test_profreport.c - unit tests of topoprof's report builder
 * (profiler/report.c, svg.c, fabric.c), no MPI: hosts numbered by first
 * rank, rows folded into the hop and level splits and the host-pair matrix,
 * hostile host names escaped in JSON and SVG, a dead topod leaves a report
 * without its fabric part. Built plain and under ASan+UBSan (Makefile,
 * profiler block); TAP lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/tap.h"
#include "prof.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = '\0';
	fclose(f);
	return s;
}

/* names[r] for n ranks into PROF_NAME_SLOT slots */
static char *slots(const char *const *names, int n)
{
	char *s = calloc((size_t)n, PROF_NAME_SLOT);
	for (int r = 0; r < n; r++)
		snprintf(s + (size_t)r * PROF_NAME_SLOT, PROF_NAME_SLOT, "%s", names[r]);
	return s;
}

int main(void)
{
	/* 5 ranks on 3 hosts, one with a hostile name */
	const char *names[] = { "a", "ev\"il<h>&", "a", "c", "ev\"il<h>&" };
	const int n = 5;
	char *s = slots(names, n);
	struct prof_rep R;
	CHECK(rep_init(&R, n, s) == 0, "rep_init");
	CHECK(R.nh == 3 && R.host_of[0] == 0 && R.host_of[1] == 1 && R.host_of[2] == 0 && R.host_of[3] == 2 &&
		   R.host_of[4] == 1 && !strcmp(R.hostname[1], names[1]),
	   "hosts numbered in order of their first rank (3 hosts)");

	/* a fabric: a-ev 1 hop, a-c 3 hops, ev-c no route */
	R.fab.ok = 1;
	R.fab.hops = malloc(9 * sizeof(uint16_t));
	uint16_t hm[9] = { 0, 1, 3, 1, 0, UINT16_MAX, 3, UINT16_MAX, 0 };
	memcpy(R.fab.hops, hm, sizeof(hm));
	/* levels: a and ev under leaf cluster 10 (level 1), all under root 0 (level 0) */
	R.fab.anc = malloc(3 * PROF_LEVELS_MAX * sizeof(long));
	for (int i = 0; i < 3 * PROF_LEVELS_MAX; i++)
		R.fab.anc[i] = -1;
	R.fab.anc[0 * PROF_LEVELS_MAX + 0] = 0, R.fab.anc[0 * PROF_LEVELS_MAX + 1] = 10;
	R.fab.anc[1 * PROF_LEVELS_MAX + 0] = 0, R.fab.anc[1 * PROF_LEVELS_MAX + 1] = 10;
	R.fab.anc[2 * PROF_LEVELS_MAX + 0] = 0, R.fab.anc[2 * PROF_LEVELS_MAX + 1] = 11;
	R.fab.depth = 2;
	CHECK(rep_class(&R, 0, 0) == 0 && rep_class(&R, 0, 1) == 1 && rep_class(&R, 0, 2) == 3 &&
		   rep_class(&R, 1, 2) == PROF_HOP_UNKNOWN,
	   "hop classes: same host 0, 1, 3, no route = unknown");
	CHECK(rep_level(&R, 0, 0) == LV_HOST && rep_level(&R, 0, 1) == 1 && rep_level(&R, 0, 2) == 0,
	   "levels: same host, leaf level 1, root level 0");
	/* topod says 0 hops between two names of one host (a host to itself):
	 * the pair is intra-host in both splits, not a leaf-level pair */
	R.fab.hops[0 * 3 + 1] = R.fab.hops[1 * 3 + 0] = 0;
	char cname[32];
	CHECK(rep_class(&R, 0, 1) == 0 && rep_level(&R, 0, 1) == LV_HOST &&
		      !strcmp(prof_class_name(rep_class(&R, 1, 0), cname, sizeof(cname)), "intra-host"),
	      "two names topod puts 0 hops apart: class intra-host, level host (not leaf level 1)");
	R.fab.hops[0 * 3 + 1] = R.fab.hops[1 * 3 + 0] = 1;

	/* rank 0 sends 100 B p2p to rank 1 (1 hop), 7 B to rank 2 (same host),
	 * 50 B of collective to rank 3 (3 hops); rank 1 sends 9 B to rank 3
	 * (no route) */
	uint64_t *row = calloc((size_t)ROW_NARRAYS * n, sizeof(uint64_t));
	row[ROW_P2P_BYTES * n + 1] = 100, row[ROW_P2P_MSGS * n + 1] = 2;
	row[ROW_P2P_BYTES * n + 2] = 7, row[ROW_P2P_MSGS * n + 2] = 1;
	row[ROW_COLL_BYTES * n + 3] = 50, row[ROW_COLL_MSGS * n + 3] = 1;
	rep_add_row(&R, 0, row);
	memset(row, 0, (size_t)ROW_NARRAYS * n * sizeof(uint64_t));
	row[ROW_P2P_BYTES * n + 3] = 9, row[ROW_P2P_MSGS * n + 3] = 3;
	rep_add_row(&R, 1, row);
	CHECK(R.total[0] == 116 && R.total[1] == 6 && R.total[2] == 50 && R.total[3] == 1, "totals");
	CHECK(R.byhop[0][0] == 7 && R.byhop[1][0] == 100 && R.byhop[1][1] == 2 && R.byhop[3][2] == 50 &&
		   R.byhop[PROF_HOP_UNKNOWN][0] == 9 && R.byhop[PROF_HOP_UNKNOWN][1] == 3,
	   "hop split: intra-host 7, 1 hop 100 (2 msgs), 3 hops 50 collective, unknown 9");
	CHECK(R.bylevel[LV_HOST][0] == 7 && R.bylevel[1][0] == 100 && R.bylevel[0][2] == 50 && R.bylevel[0][0] == 9,
	   "level split");
	CHECK(R.hostpair[0 * 3 + 1] == 100 && R.hostpair[0 * 3 + 0] == 7 && R.hostpair[0 * 3 + 2] == 50 &&
		   R.hostpair[1 * 3 + 2] == 9,
	   "host-pair matrix (p2p + collective)");

	/* a link named after the hostile host, as links.c would fill it */
	R.fab.links_ok = 1;
	R.fab.nlinks = R.fab.links_total = 1;
	R.fab.links = calloc(1, sizeof(*R.fab.links));
	snprintf(R.fab.links[0].from, sizeof(R.fab.links[0].from), "%s", names[1]);
	snprintf(R.fab.links[0].to, sizeof(R.fab.links[0].to), "0x0000000000000001");
	R.fab.links[0].from_host = 1, R.fab.links[0].to_host = -1;
	R.fab.links[0].bytes = 100, R.fab.links[0].pairs = 1, R.fab.links[0].nflows = 1;
	R.fab.links[0].flows[0].src = 1, R.fab.links[0].flows[0].dst = 0, R.fab.links[0].flows[0].bytes = 100;
	snprintf(R.fab.links_how, sizeof(R.fab.links_how), "test");

	char dir[] = "/tmp/test_profreport.XXXXXX", prefix[128], path[160], why[PROF_WHY] = "";
	CHECK(mkdtemp(dir) != NULL, "temp dir");
	snprintf(prefix, sizeof(prefix), "%s/r", dir);
	CHECK(rep_write(&R, prefix, why) == 0, "rep_write (%s)", why);
	snprintf(path, sizeof(path), "%s.json", prefix);
	char *js = slurp(path);
	CHECK(js && strstr(js, "\"ev\\\"il<h>&\"") && strstr(js, "\"format\": \"topoprof/1\""),
	   "JSON: the hostile name is escaped");
	CHECK(js && strstr(js, "{\"hops\": -1, \"class\": \"unknown\", \"bytes\": 9, \"messages\": 3}"),
	   "JSON: the unknown class");
	free(js);
	snprintf(path, sizeof(path), "%s-links.svg", prefix);
	char *sv = slurp(path);
	CHECK(sv && strstr(sv, "ev\"il&lt;h&gt;&amp;") && !strstr(sv, "<h>"), "links SVG: the name is XML-escaped");
	free(sv);
	snprintf(path, sizeof(path), "%s.txt", prefix);
	char *tx = slurp(path);
	CHECK(tx && strstr(tx, "1 hop") && strstr(tx, "unknown") && strstr(tx, "1 of 1 loaded links, by test"),
	   "text report");
	free(tx);
	static const char *const ext[] = { ".txt", ".json", "-hops.svg", "-heatmap.svg", "-links.svg", "-hosts.svg" };
	for (size_t i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), "%s%s", prefix, ext[i]);
		unlink(path);
	}
	rmdir(dir);
	rep_free(&R);

	/* a dead topod: no fabric part, and why */
	s = (free(s), slots(names, n));
	CHECK(rep_init(&R, n, s) == 0, "rep_init again");
	setenv("TII_SERVERS", "127.0.0.1:1", 1);
	void *h = NULL;
	fab_query(&R, &h);
	CHECK(!R.fab.ok && strstr(R.fab.why, "127.0.0.1:1") && strstr(R.fab.why, "onnect"),
	   "topod down: no fabric part, why: %s", R.fab.why);
	fab_close(h);
	CHECK(rep_class(&R, 0, 1) == PROF_HOP_UNKNOWN && rep_class(&R, 1, 1) == 0,
	   "without the fabric: other hosts unknown, same host intra-host");
	CHECK(rep_write(&R, "/nonexistent-dir/r", why) == -1 && strstr(why, "/nonexistent-dir/r"),
	   "an unwritable prefix: -1 and why (%s)", why);
	rep_free(&R);
	free(s);
	free(row);
	return TAP_DONE();
}
