/*
 * fuzz_tii.c - libFuzzer harness for libtii's reply parsers: every call
 * that asks topod something, fed a hostile server's bytes.
 *
 * The transport is libtii's own (net.c, request.c): only the system calls
 * under it are replaced (fakenet.h), so the line reader, the failover loop
 * and every parser run as they do against a real server.
 *
 * Input: byte 0 picks the call; byte 1 the chunk size (low 6 bits, 0:
 * 64 KiB), a variant of the call's arguments (0x40) and whether the
 * handle asks a plane first (0x80: one more reply line); the rest is what
 * the server says. Whatever a call returns, its result is read in full (ASan
 * sees every element) and freed; a call that fails leaves *out alone.
 *
 * Seeds (tests/fuzz/mkcorpus.sh): with FUZZ_TII_SERVERS=HOST:PORT the
 * harness asks that real server instead (through a recording proxy).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tii.h"

#include "fakenet.h"

/* ---- reading results ---------------------------------------------------------- */

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += c[i];
	sink += s;
}

static void touch_str(const char *s)
{
	if (s)
		touch(s, strlen(s) + 1);
}

/* The hosts of tests/fixtures/2sw4hca, whose topod made the seeds. */
static const char *const H[] = { "Hca1", "Hca2", "Hca3", "Hca4" };
#define NH 4

static void read_tree(tii_tree_t *tr)
{
	touch(tr->clusters, tr->nclusters * sizeof(*tr->clusters));
	for (size_t i = 0; i < tr->nhosts; i++)
		touch_str(tr->hosts[i].name);
	for (size_t i = 0; tr->names && i < tr->nclusters; i++)
		touch_str(tr->names[i]);
	for (size_t i = 0; i < tr->ngone; i++)
		touch_str(tr->gone[i].name);
	for (size_t i = 0; i < tr->nclusters; i++)
		if (tr->clusters[i].parent < -1 || tr->clusters[i].parent >= (long)tr->nclusters)
			abort();   /* an index the caller would follow */
	for (size_t i = 0; i < tr->nhosts; i++)
		if (tr->hosts[i].parent < 0 || tr->hosts[i].parent >= (long)tr->nclusters)
			abort();
}

static void read_load(tii_load_t *l)
{
	touch(l->levels, l->nlevels * sizeof(*l->levels));
	touch(l->links, l->nlinks * sizeof(*l->links));
	touch(l->hostnames, l->nhostnames * sizeof(*l->hostnames));
	for (size_t i = 0; i < l->nmax; i++)
		for (size_t k = 0; k < l->max[i].nbehind; k++)
			touch_str(l->max[i].behind[k]);
}

static void read_sched(tii_schedule_t *s)
{
	if (s->nsteps < 0 || s->nranks < 0)
		abort();
	touch(s->step_off, ((size_t)s->nsteps + 1) * sizeof(int));
	size_t nf = (size_t)s->step_off[s->nsteps];
	touch(s->src, nf * sizeof(int));
	touch(s->dst, nf * sizeof(int));
	if (s->blk)
		touch(s->blk, nf * sizeof(int));
	touch(s->steps, (size_t)s->nsteps * sizeof(*s->steps));
	if (s->level_max)
		touch(s->level_max, (size_t)s->nsteps * (size_t)s->nlevels * sizeof(int));
	int *to = malloc(((size_t)s->nranks + 1) * sizeof(int)), *from = malloc(((size_t)s->nranks + 1) * sizeof(int));
	for (int i = 0; i < s->nsteps; i++)
		tii_schedule_partners(s, i, to, from);
	free(to);
	free(from);
}

static void read_show(tii_show_t *s)
{
	for (size_t i = 0; i < s->nnodes; i++)
		touch(s->nodes[i].ports, s->nodes[i].nlisted * sizeof(*s->nodes[i].ports));
}

/* ---- the calls ----------------------------------------------------------------- */

static void call(tii_t *t, unsigned which, int variant)
{
	int v = 0, c = 0, colors[NH];
	uint64_t g = 0, ids[NH], m64[NH * NH];
	uint16_t m16[NH * NH];
	size_t n = 0, order[NH], chosen[NH], rh[16];
	double d = 0;
	tii_pick_info_t pi;
	tii_map_info_t mi;
	switch (which) {
	case 0: { struct tii_info in; tii_get_info(t, &in); touch_str(in.source); break; }
	case 1: tii_get_generation(t, &g); break;
	case 2: tii_get_network_depth(t, &v); break;
	case 3: tii_num_switch_clusters_at_depth(t, H, NH, 1, &v); break;
	case 4: tii_connected_switch_cluster_at_depth(t, H[0], -1, &g); break;
	case 5: tii_connected_switch_clusters_at_depth(t, H, NH, 0, ids, &c); break;
	case 6: tii_get_cluster_colors_at_depth(t, H, NH, 1, colors, &c); break;
	case 7: { tii_tree_t *tr = NULL; if (!tii_get_tree(t, &tr)) read_tree(tr); tii_tree_free(tr); break; }
	case 8: {
		struct tii_switch_name *sn = NULL;
		if (!tii_get_switch_names(t, &sn, &n)) {
			for (size_t i = 0; i < n; i++)
				touch_str(sn[i].name);
			if (n)
				touch_str(tii_switch_name_of(sn, n, sn[n / 2].guid));
			tii_switch_names_free(sn, n);
		}
		break;
	}
	case 9: tii_get_hops(t, H[0], H[1], &v); break;
	case 10: {
		tii_path_t *p = NULL;
		if (!tii_get_path(t, H[0], H[1], &p)) {
			touch_str(p->src);
			touch_str(p->dst);
			for (size_t i = 0; i < p->nswitches; i++)
				touch_str(p->switches[i].name);
		}
		tii_path_free(p);
		break;
	}
	case 11: tii_get_hop_matrix(t, H, NH, m16); break;
	case 12: {
		tii_path_matrix_t *pm = NULL;
		if (!tii_get_network_path_matrix(t, H, NH, &pm))
			for (size_t i = 0; i < NH; i++)
				for (size_t j = 0; j < NH; j++) {
					const uint64_t *gu;
					size_t len;
					if (!tii_path_matrix_route(pm, i, j, &gu, &len))
						touch(gu, len * sizeof(*gu));
				}
		tii_path_matrix_free(pm);
		break;
	}
	case 13: tii_get_num_hosts_sharing_links(t, H, NH, &v); break;
	case 14: { int sh[NH]; tii_get_hosts_sharing_links(t, H, NH, sh, &v); break; }
	case 15: tii_get_avg_hosts_per_leaf_switch(t, H, NH, &d); break;
	case 16: {
		tii_sharing_t *sh = NULL;
		if (!tii_get_link_sharing(t, H, NH, &sh)) {
			touch(sh->sharing, sh->nsharing * sizeof(*sh->sharing));
			for (size_t i = 0; i < sh->ngroups; i++)
				touch(sh->groups[i].hosts, sh->groups[i].nhosts * sizeof(size_t));
			touch(sh->loads, sh->nloads * sizeof(*sh->loads));
		}
		tii_sharing_free(sh);
		break;
	}
	case 17: case 18: {
		tii_load_t *l = NULL;
		if (!tii_get_pattern_load(t, H, NH, "alltoall", (uint64_t)6 << 30, which == 18 ? TII_LOAD_NOLINKS : 0, &l))
			read_load(l);
		tii_load_free(l);
		break;
	}
	case 19: {
		static const struct tii_flow fl[] = { { 0, 1, 341303846527ull }, { 2, 3, 1 }, { 3, 0, 1ull << 53 } };
		tii_load_t *l = NULL;
		if (!tii_get_matrix_load(t, H, NH, fl, 3, 0, &l))
			read_load(l);
		tii_load_free(l);
		break;
	}
	case 20: { struct tii_endpoint ep; tii_resolve(t, H[0], &ep); break; }
	case 21: {
		tii_hosts_t *h = NULL;
		if (!tii_get_hosts(t, &h))
			for (size_t i = 0; i < h->n; i++) {
				touch_str(h->hosts[i].name);
				touch(h->hosts[i].rails, h->hosts[i].nrails * sizeof(struct tii_rail));
			}
		tii_hosts_free(h);
		break;
	}
	case 22: { int hops[NH]; tii_get_hops_batch(t, H, H + 0, NH, hops); break; }
	case 23: tii_ping(t); break;
	case 24: tii_watch(t, 5, 1000, &g); break;
	case 25: if (!tii_watch_start(t, 5, 1000)) tii_watch_finish(t, &g); tii_watch_cancel(t); break;
	case 26: {
		tii_history_t *h = NULL;
		if (!tii_get_history(t, &h))
			touch(h->gens, h->n * sizeof(*h->gens));
		tii_history_free(h);
		break;
	}
	case 27: {
		tii_diff_t *df = NULL;
		if (!tii_diff(t, "@1700000000", "@9999999999", variant ? NULL : H, variant ? 0 : NH, &df)) {
			for (size_t i = 0; i < df->npairs; i++) {
				touch_str(df->pairs[i].a);
				touch_str(df->pairs[i].b);
			}
			for (size_t i = 0; i < df->nlines; i++)
				touch_str(df->lines[i]);
		}
		tii_diff_free(df);
		break;
	}
	case 28: tii_order_hosts(t, H, NH, order); break;
	case 29: tii_pick_hosts(t, H, NH, 2, chosen, &pi); break;
	case 30: {
		static const int slots[NH] = { 2, 2, 2, 2 }, xadj[] = { 0, 1, 2, 3, 4 }, adj[] = { 1, 0, 3, 2 },
				 w[] = { 5, 5, 7, 7 };
		tii_map_graph(t, H, slots, NH, 4, xadj, adj, w, rh, &mi);
		break;
	}
	case 31: {
		static const int slots[NH] = { 4, 4, 4, 4 }, dims[3] = { 4, 4, 1 };
		tii_map_stencil(t, H, slots, NH, dims, 1, rh, &mi);
		break;
	}
	case 32: {
		static const int src[] = { 0, 1 }, deg[] = { 1, 1 }, dst[] = { 1, 0 }, w[] = { 3, 3 };
		int nr[NH];
		tii_reorder_ranks(t, H, NH, 2, src, deg, dst, w, nr, &mi);
		break;
	}
	case 33: { size_t out[NH], tr = 0; tii_pick_trade(t, H, 2, H + 2, 2, out, &tr, &pi); break; }
	case 34: tii_pick_hosts_pattern(t, "stencil2d:2,1", H, NH, 2, chosen, &pi); break;
	case 35: { tii_pick_wider_t w; tii_pick_hosts_leaves(t, "alltoall", TII_LEAVES_AUTO, H, NH, 3, chosen, &pi, &w); break; }
	case 36: case 37: case 38: case 39: {
		/* the rank form and the host form, an alltoall's and an allgather's */
		struct tii_schedule_params p = { .algo = which < 38 ? TII_SCHED_ROUTE : TII_SCHED_AGBEST };
		static const char *const R[8] = { "Hca1", "Hca1", "Hca2", "Hca2", "Hca3", "Hca3", "Hca4", "Hca4" };
		tii_schedule_t *s = NULL;
		tii_set_schedule_form(t, which & 1 ? TII_SCHED_FORM_HOSTS : TII_SCHED_FORM_RANKS);
		tii_set_schedule_advice(t, (uint64_t)1 << 40, 1);
		if (variant)   /* 1.7: window= and native= in the reply */
			tii_set_schedule_run(t, TII_SCHED_WINDOW_AUTO, TII_NATIVE_SMPI_OMPI);
		if (!tii_get_schedule(t, &p, R, 8, &s))
			read_sched(s);
		tii_schedule_free(s);
		break;
	}
	case 40: { char *x = NULL; if (!tii_get_simgrid_platform(t, H, NH, &x, &n)) touch(x, n); free(x); break; }
	case 41: {
		tii_show_t *s = NULL;
		if (!tii_show(t, variant ? H[0] : "Switch1", &s))
			read_show(s);
		tii_show_free(s);
		break;
	}
	case 42: {
		tii_links_t *l = NULL;
		if (!tii_get_links(t, variant ? "Hca" : NULL, variant ? NULL : "active", &l))
			touch(l->links, l->n * sizeof(*l->links));
		tii_links_free(l);
		break;
	}
	case 43: tii_get_delay_matrix(t, H, NH, (uint64_t)1 << 33, m64); break;
	case 44: {
		char *x = NULL;
		size_t hosts = 0;
		if (!tii_get_simgrid_fabric(t, &x, &n, &hosts))
			touch(x, n);
		free(x);
		break;
	}
	case 45: { struct tii_plane pl[TOPO_PLANES_MAX]; tii_get_planes(t, variant ? H[0] : NULL, pl, &n); break; }
	}
}
#define NCALLS 46

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	tii_t *t;
	const char *real = getenv("FUZZ_TII_SERVERS");
	if (tii_open(&t, real ? real : "127.0.0.1:7878"))
		abort();
	tii_set_timeout(t, 2000);
	if (data[1] & 0x80)
		tii_set_plane(t, "default");
	F = (struct fakenet){ .data = data + 2, .len = size - 2, .chunk = (data[1] & 0x3f) ? (data[1] & 0x3f) : 65536,
			 .active = !real };
	call(t, data[0] % NCALLS, data[1] & 0x40);
	touch_str(tii_last_message(t));
	tii_close(t);
	F.active = 0;
	F.nfd = 0;
	return 0;
}
