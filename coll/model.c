/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model.c - how long a collective takes, the MPI's own and each of
 * topocoll's, predicted by the one cost model of the analyses
 * (analysis/cost.h cost_sim_run, docs/cost-model.md "Every collective"),
 * so that a call runs topocoll's way only where that is predicted faster
 * with the model's measured errors against it (docs/collectives.md, "How
 * it chooses").
 *
 * Both sides are programs of every rank's sends, receives and waits, timed
 * on the job's real routes (the platform's, topo.c) as SimGrid's SMPI runs
 * them with tests/lib/smpi.sh's settings: a message moves once both ends
 * posted it, waits its route's latency, shares its cables max-min fairly;
 * below 64 KiB a send completes when posted. The MPI's own is its
 * selector's algorithm as its code runs it (analysis/nativecoll.h);
 * topocoll's are its plans (plan.c), the very ops it runs.
 *
 * Rank 0 of the communicator predicts, on the first call of each size
 * class, and every rank gets its answer (a broadcast): ranks never choose
 * differently, whatever memory one of them lacks.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "mprog.h"
#include "nativecoll.h"
#include "plan.h"

const char *const tc_variant_name[TC_NVARIANTS] = {
	"the MPI's own", "by levels", "in the fabric's order", "in rank order", "pipelined chain", "topod's schedule",
	"ring in the fabric's order", "hosts gathered, their leaders' ring in the fabric's order", "leaf-hierarchical",
	"topod's allgather schedule", "scatter and allgather in the fabric's order"
};
const char *const tc_variant_key[TC_NVARIANTS] = { "native", "hier", "tree", "rankorder", "pipe", "sched", "ring",
						   "hosts", "leaves", "agsched", "scag" };

static const char *alg_name(int alg)
{
	switch (alg) {
	case TP_A_RDB_ALLRED:
	case TP_A_RDB_ALLGATHER: return "recursive doubling";
	case TP_A_RAB_ALLRED: return "Rabenseifner's halving and doubling";
	case TP_A_BRUCK_ALLGATHER: return "Bruck's dissemination";
	default: return "ring";
	}
}

static const char *tree_name(int shape, int k)
{
	static const char *const flat = "a flat tree", *const bin = "a binomial tree", *const k4 = "a 4-nomial tree",
				 *const k8 = "an 8-nomial tree", *const chain = "a chain";
	if (shape == TP_T_CHAIN)
		return chain;
	return k == 0 ? flat : k == 2 ? bin : k == 4 ? k4 : k8;
}

void tc_describe(enum tc_op op, int v, const struct tc_choice *ch, char *out, size_t n)
{
	char mode[96] = "";
	if (v == TC_V_NATIVE || !ch || (op == TC_ALLGATHER && v >= TC_V_RING && v <= TC_V_AGSCHED)) {
		snprintf(out, n, "%s", tc_variant_name[v]);
		return;
	}
	if (op == TC_ALLREDUCE || op == TC_ALLGATHER) {
		if (v == TC_V_HIER && ch->hier == TP_GRID)
			snprintf(out, n, "a grid: the leaves' i-th ranks' %s, then each leaf's", alg_name(ch->alg));
		else if (v == TC_V_HIER)
			snprintf(out, n, "each host's %s at its leader, the leaders' %s in the fabric's order",
				 op == TC_ALLREDUCE ? "ranks reduced" : "blocks", alg_name(ch->alg));
		else
			snprintf(out, n, "%s in %s order", alg_name(ch->alg), v == TC_V_RANKORD ? "rank" : "the fabric's");
		return;
	}
	if (ch->seg > 0)
		snprintf(mode, sizeof(mode), ", %lld-byte segments%s", ch->seg, ch->sync ? " synchronous" : "");
	else if (ch->seq)
		snprintf(mode, sizeof(mode), ", a child after the other%s", ch->sync ? " synchronously" : "");
	if (v == TC_V_SCAG)
		snprintf(out, n, "scatter and %s allgather in the fabric's order", ch->k[0] == 1 ? "recursive doubling" : "ring");
	else if (v == TC_V_HIER && ch->shape == TP_T_RELAY)
		snprintf(out, n, "a tree by levels: the other leaves' %s under the root leaf's hosts, hosts' (%s), ranks%s",
			 ch->k[0] == 1 ? "hosts" : "leaders", tree_name(TP_T_KNOMIAL, ch->k[1]), mode);
	else if (v == TC_V_HIER)
		snprintf(out, n, "a tree by levels: leaves' leaders (%s), hosts' (%s), ranks%s",
			 tree_name(TP_T_KNOMIAL, ch->k[0]), tree_name(TP_T_KNOMIAL, ch->k[1]), mode);
	else if (v == TC_V_HOSTS)
		snprintf(out, n, "a tree of hosts' leaders (%s), then each host's ranks%s", tree_name(TP_T_KNOMIAL, ch->k[0]),
			 mode);
	else
		snprintf(out, n, "%s in the fabric's order%s", tree_name(ch->shape, ch->k[0]), mode);
}

/* ---- the job's routes as the cost model sees them ---------------------------------- */

static const uint64_t *cables(uint32_t *n)
{
	struct tc_topo *t = &tc_g.topo;
	if (!t->nroutes)
		return NULL;
	*n = (uint32_t)t->ncables + 2 * (uint32_t)t->nhosts;
	if (!t->cbps) {
		uint64_t *b = malloc(((size_t)*n + 1) * sizeof(uint64_t));
		if (!b)
			return NULL;
		for (int i = 0; i < t->ncables; i++)
			b[i] = t->lbps[i];
		for (int h = 0; h < t->nhosts; h++)
			b[t->ncables + 2 * h] = b[t->ncables + 2 * h + 1] = t->hbps[h];
		t->cbps = b;
	}
	return t->cbps;
}

static uint32_t route_cb(const void *ctx, uint32_t a, uint32_t b, uint32_t *out)
{
	const struct tc_comm *c = ctx;
	const struct tc_topo *t = &tc_g.topo;
	return tc_route(t, t->host_of[c->world[a]], t->host_of[c->world[b]], out);
}

/* The programs of mp timed: seconds, or -1. */
static double run_time(const struct tc_comm *c, const struct mprog *mp)
{
	struct mp_built b;
	char err[AN_ERR_LEN];
	uint32_t nc = 0;
	const uint64_t *bps = cables(&nc);
	double s = -1;
	if (!bps || mp_build(mp, &b, err))
		return -1;
	if (mp_time(&b, route_cb, c, nc, bps, NULL, &s, err))
		s = -1;
	mp_built_free(&b);
	return s;
}

/* ---- the MPI's own ------------------------------------------------------------------ */

struct ncomm {
	struct nc_comm nc;
	uint32_t *m, *host;
};

static int ncomm_make(const struct tc_comm *c, struct ncomm *x)
{
	x->m = malloc(((size_t)c->size + 1) * sizeof(uint32_t));
	x->host = malloc(((size_t)c->size + 1) * sizeof(uint32_t));
	if (!x->m || !x->host) {
		free(x->m);
		free(x->host);
		return -1;
	}
	for (int r = 0; r < c->size; r++) {
		x->m[r] = (uint32_t)r;
		x->host[r] = (uint32_t)tc_g.topo.host_of[c->world[r]];
	}
	x->nc = (struct nc_comm){ (uint32_t)c->size, x->m, x->host };
	return 0;
}

/* The MPI's own call k appended to mp. */
static int native_prog(const struct tc_comm *c, const struct tc_call *k, struct mprog *mp)
{
	struct ncomm x;
	char err[AN_ERR_LEN];
	enum native_model md = (enum native_model)tc_g.nmodel;
	int rc;
	if (ncomm_make(c, &x))
		return -1;
	switch (k->op) {
	case TC_BCAST: rc = nc_bcast(md, mp, &x.nc, (uint32_t)k->root, (uint64_t)k->bytes, 1, err); break;
	case TC_GATHER: rc = nc_gather(md, mp, &x.nc, (uint32_t)k->root, (uint64_t)k->bytes, 1, err); break;
	case TC_SCATTER: rc = nc_scatter(md, mp, &x.nc, (uint32_t)k->root, (uint64_t)k->bytes, 1, err); break;
	case TC_ALLREDUCE:
		rc = nc_allreduce(md, mp, &x.nc, (uint64_t)k->count, (uint32_t)k->tsize, k->commute, err);
		break;
	case TC_ALLGATHER: rc = nc_allgather(md, mp, &x.nc, (uint64_t)k->bytes, 1, err); break;
	default: rc = -1; break;
	}
	free(x.m);
	free(x.host);
	return rc ? -1 : 0;
}

/* The ranks' agreement before a run that needs more room than the
 * communicator holds: the MPI's own 4-byte Allreduce. */
static int agree_prog(const struct tc_comm *c, struct mprog *mp)
{
	struct tc_call k = { .op = TC_ALLREDUCE, .bytes = 4, .count = 1, .tsize = 4, .commute = 1 };
	return native_prog(c, &k, mp);
}

/* ---- topocoll's plans --------------------------------------------------------------- */

void tc_plan_args(const struct tc_choice *ch, const struct tc_call *k, struct tp_args *a)
{
	*a = (struct tp_args){ .alg = (enum tp_alg)ch->alg, .shape = (enum tp_shape)ch->shape,
			       .k = { ch->k[0], ch->k[1], ch->k[2] }, .seq = ch->seq, .sync = ch->sync, .hier = ch->hier,
			       .rankorder = ch->rankorder, .root = k->root, .count = k->count, .seg = ch->seg,
			       .blen = k->blen };
}

long long tc_plan_scratch(const struct tc_comm *c, const struct tp_args *a, const struct tc_call *k)
{
	switch (k->op) {
	case TC_BCAST: return k->bytes;
	case TC_GATHER:
	case TC_SCATTER: return k->bytes * c->size;
	case TC_ALLREDUCE: return k->count * (k->ext > k->tsize ? k->ext : k->tsize) + 64;
	default: return 2 * k->bytes * c->size;
	}
	(void)a;
}

long long tc_plan_ops(const struct tc_comm *c, const struct tp_args *a, int maxkids)
{
	long long P = c->size;
	if (a->alg == TP_A_TREE_BCAST) {
		long long nseg = a->seg > 0 ? (a->count + a->seg - 1) / a->seg : 1;
		return nseg * (2 + 2LL * maxkids) + 8;
	}
	if (a->alg == TP_A_TREE_GATHER || a->alg == TP_A_TREE_SCATTER)
		return 2LL * maxkids + 8;
	return 16 * P + 8LL * c->maxfh + 64;
}

/* The plan for call k with choice ch appended to mp, its agreement first
 * where its scratch exceeds what is kept. */
static int plan_prog(const struct tc_comm *c, const struct tc_call *k, const struct tc_choice *ch, struct mprog *mp)
{
	struct tp_args a;
	tc_plan_args(ch, k, &a);
	if (tc_plan_scratch(c, &a, k) > TC_ARENA_KEEP && agree_prog(c, mp))
		return -1;
	return tp_prog(c, &a, k->op == TC_ALLREDUCE ? k->tsize : 1, mp);
}

/* The ring (allgather.c): its agreement, then its steps over blocks of
 * blen[r] (or bytes) of each rank. */
static int agold_prog(const struct tc_comm *c, const struct tc_call *k, struct mprog *mp)
{
	int n = c->size;
	if (agree_prog(c, mp))
		return -1;
	for (int i = 0; i < n; i++) {
		int r = c->fab[i], right = c->fab[(i + 1) % n], left = c->fab[(i + n - 1) % n];
		for (int st = 0; st + 1 < n; st++) {
			int sb = c->fab[(i + n - st) % n], rb = c->fab[(i + 2 * n - st - 1) % n];
			double sl = (double)(k->blen ? k->blen[sb] : k->bytes), rl = (double)(k->blen ? k->blen[rb] : k->bytes);
			uint32_t x = mp_isend(mp, (uint32_t)r, (uint32_t)right, sl), y = mp_irecv(mp, (uint32_t)r, (uint32_t)left, rl);
			mp_wait(mp, (uint32_t)r, x);
			mp_wait(mp, (uint32_t)r, y);
		}
	}
	return 0;
}

/* topod's allgather schedule for k's blocks: topod predicted it for the
 * blocks it was asked for, beside its ring in the fabric's order, which is
 * what TC_V_RING runs; that ratio applied to this model's ring. Only where
 * the ratio was measured to hold: even blocks of TOPOCOLL_ALLGATHER_MIN and
 * 64 KiB and more (below, the schedule's P-1 latency-bound steps err as the
 * ring's do), and only beside topod's ring time (a time scaled by bytes
 * alone would drop the latencies). */
static double agsched_predict(struct tc_comm *c, const struct tc_call *k)
{
	const struct tc_agsched *s = c->agsched;
	if (!s || s->time_s <= 0 || !s->bytes || s->agring_s <= 0 || k->blen || k->bytes < tc_g.ag_min ||
	    k->bytes < 65536)
		return -1;
	double r = tc_predict(c, k, TC_V_RING, NULL);
	return r > 0 ? r * s->time_s / s->agring_s : -1;
}

double tc_predict(struct tc_comm *c, const struct tc_call *k, enum tc_variant v, const struct tc_choice *ch)
{
	struct mprog mp;
	if (k->op == TC_ALLGATHER && v == TC_V_AGSCHED)
		return agsched_predict(c, k);
	if (!c->world || !tc_g.topo.nworld || !tc_g.topo.nroutes || mp_init(&mp, (uint32_t)c->size))
		return -1;
	int rc;
	if (v == TC_V_NATIVE)
		rc = native_prog(c, k, &mp);
	else if (k->op == TC_ALLGATHER && v == TC_V_RING)
		rc = agold_prog(c, k, &mp);
	else if (k->op == TC_ALLGATHER && v != TC_V_TREE && v != TC_V_HIER)
		rc = -1; /* hosts, leaves (the MPI's own within): not timed */
	else
		rc = ch ? plan_prog(c, k, ch, &mp) : -1;
	double t = rc ? -1 : run_time(c, &mp);
	mp_free(&mp);
	return t;
}

/* ---- the candidates ------------------------------------------------------------------ */

#define TC_CANDS 96

struct cand {
	signed char v;
	struct tc_choice p;
};

static void add(struct cand *cs, int *n, enum tc_variant v, int alg, int shape, int k0, int k1, int k2, int seq,
		int hier, int rankorder, long long seg)
{
	if (*n >= TC_CANDS)
		return;
	/* seq 2: one after the other, synchronous */
	struct tc_choice p = { .variant = (signed char)v, .alg = alg, .shape = shape, .k = { k0, k1, k2 }, .seq = seq > 0,
			       .sync = seq == 2, .hier = hier, .rankorder = rankorder, .seg = seg };
	cs[(*n)++] = (struct cand){ (signed char)v, p };
}

static int pow2(int n)
{
	return n > 0 && !(n & (n - 1));
}

/* Every variant of every family that applies to call k. */
static int candidates(const struct tc_comm *c, const struct tc_call *k, struct cand *cs)
{
	int n = 0, P = c->size, several = c->maxfh > 1;
	long long S = k->bytes;
	switch (k->op) {
	case TC_BCAST: {
		/* modes: 0 every child's send posted at once; 1 one after the
		 * other (rendezvous sizes: each child gets it whole first); 2
		 * the same, synchronous (below the eager limit too) */
		static const int radix[] = { 2, 4, 8, 0 };
		for (int mode = 0; mode < 3; mode++) {
			if (mode == 1 && S < 65536)
				continue;
			for (int i = 0; i < 4; i++)
				add(cs, &n, TC_V_TREE, TP_A_TREE_BCAST, TP_T_KNOMIAL, radix[i], 0, 0, mode, 0, 0, 0);
			add(cs, &n, TC_V_HIER, TP_A_TREE_BCAST, TP_T_LEVELS, 0, 0, 0, mode, 0, 0, 0);
			add(cs, &n, TC_V_HIER, TP_A_TREE_BCAST, TP_T_LEVELS, 2, 0, 0, mode, 0, 0, 0);
			add(cs, &n, TC_V_HIER, TP_A_TREE_BCAST, TP_T_LEVELS, 2, 2, 0, mode, 0, 0, 0);
			if (several) {
				add(cs, &n, TC_V_HOSTS, TP_A_TREE_BCAST, TP_T_HOSTS, 2, 0, 0, mode, 0, 0, 0);
				add(cs, &n, TC_V_HOSTS, TP_A_TREE_BCAST, TP_T_HOSTS, 0, 0, 0, mode, 0, 0, 0);
			}
		}
		/* pipelines: segments below the eager limit synchronous (paced) */
		for (long long seg = 8192; seg <= 1048576 && seg * 2 <= S; seg *= 2) {
			add(cs, &n, TC_V_PIPE, TP_A_TREE_BCAST, TP_T_CHAIN, 0, 0, 0, seg < 65536 ? 2 : 0, 0, 0, seg);
			add(cs, &n, TC_V_TREE, TP_A_TREE_BCAST, TP_T_KNOMIAL, 2, 0, 0, seg < 65536 ? 2 : 0, 0, 0, seg);
		}
		if (S < 16384)   /* for TOPOCOLL_CHOICE=pipe and tests */
			add(cs, &n, TC_V_PIPE, TP_A_TREE_BCAST, TP_T_CHAIN, 0, 0, 0, 2, 0, 0, S > 8 ? S / 4 : 1);
		add(cs, &n, TC_V_SCAG, TP_A_SCAG_BCAST, TP_T_CHAIN, 0, 0, 0, 0, 0, 0, 0);
		if (pow2(P))
			add(cs, &n, TC_V_SCAG, TP_A_SCAG_BCAST, TP_T_CHAIN, 1, 0, 0, 0, 0, 0, 0);
		break;
	}
	case TC_GATHER:
	case TC_SCATTER: {
		int alg = k->op == TC_GATHER ? TP_A_TREE_GATHER : TP_A_TREE_SCATTER;
		for (int seq = 0; seq < (k->op == TC_SCATTER ? 3 : 1); seq++) {
			add(cs, &n, TC_V_TREE, alg, TP_T_KNOMIAL, 0, 0, 0, seq, 0, 0, 0);
			add(cs, &n, TC_V_TREE, alg, TP_T_KNOMIAL, 2, 0, 0, seq, 0, 0, 0);
			add(cs, &n, TC_V_TREE, alg, TP_T_KNOMIAL, 4, 0, 0, seq, 0, 0, 0);
			add(cs, &n, TC_V_HIER, alg, TP_T_LEVELS, 0, 0, 0, seq, 0, 0, 0);
			add(cs, &n, TC_V_HIER, alg, TP_T_LEVELS, 2, 0, 0, seq, 0, 0, 0);
			if (k->op == TC_GATHER && c->nleaves > 1) {
				add(cs, &n, TC_V_HIER, alg, TP_T_RELAY, 0, 0, 0, seq, 0, 0, 0);
				add(cs, &n, TC_V_HIER, alg, TP_T_RELAY, 0, 2, 0, seq, 0, 0, 0);
				add(cs, &n, TC_V_HIER, alg, TP_T_RELAY, 1, 0, 0, seq, 0, 0, 0);
			}
			if (several) {
				add(cs, &n, TC_V_HOSTS, alg, TP_T_HOSTS, 0, 0, 0, seq, 0, 0, 0);
				add(cs, &n, TC_V_HOSTS, alg, TP_T_HOSTS, 2, 0, 0, seq, 0, 0, 0);
			}
		}
		break;
	}
	case TC_ALLREDUCE:
		if (!k->commute) {
			add(cs, &n, TC_V_RANKORD, TP_A_RDB_ALLRED, 0, 0, 0, 0, 0, 0, 1, 0);
			add(cs, &n, TC_V_RANKORD, TP_A_RAB_ALLRED, 0, 0, 0, 0, 0, 0, 1, 0);
			break;
		}
		for (int alg = TP_A_RDB_ALLRED; alg <= TP_A_RING_ALLRED; alg++) {
			add(cs, &n, TC_V_TREE, alg, 0, 0, 0, 0, 0, 0, 0, 0);
			if (several)
				add(cs, &n, TC_V_HIER, alg, 0, 0, 0, 0, 0, 1, 0, 0);
		}
		break;
	case TC_ALLGATHER:
		add(cs, &n, TC_V_RING, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		/* not modelled (never chosen by prediction): for TOPOCOLL_CHOICE */
		add(cs, &n, TC_V_HOSTS, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		add(cs, &n, TC_V_LEAVES, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		add(cs, &n, TC_V_AGSCHED, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		if (k->blen)
			break;
		for (int alg = TP_A_RDB_ALLGATHER; alg <= TP_A_RING_ALLGATHER; alg++) {
			int m = c->gridm;
			if (alg != TP_A_RDB_ALLGATHER || pow2(P))
				add(cs, &n, TC_V_TREE, alg, 0, 0, 0, 0, 0, 0, 0, 0);
			if (several && (alg != TP_A_RDB_ALLGATHER || pow2(c->nfh)))
				add(cs, &n, TC_V_HIER, alg, 0, 0, 0, 0, 0, 1, 0, 0);
			if (m && (alg != TP_A_RDB_ALLGATHER || (pow2(m) && pow2(P / m))))
				add(cs, &n, TC_V_HIER, alg, 0, 0, 0, 0, 0, TP_GRID, 0, 0);
		}
		break;
	default:
		break;
	}
	return n;
}

/* ---- the choice ------------------------------------------------------------------------- */

int tc_size_class(long long bytes)
{
	int k = 0;
	while (bytes > 0 && k < TC_CLASSES - 1) {
		bytes >>= 1;
		k++;
	}
	return k;
}

/* Rank 0's prediction: the MPI's own and every candidate (of the forced
 * family only, when forced), the fastest kept in ch. */
static void predict_all(struct tc_comm *c, const struct tc_call *k, struct tc_choice *ch, int force)
{
	struct cand *cs = malloc(TC_CANDS * sizeof(*cs));
	int n = cs ? candidates(c, k, cs) : 0;
	ch->t_native = tc_predict(c, k, TC_V_NATIVE, NULL);
	ch->best = TC_V_NATIVE;
	ch->t_best = -1;
	for (int i = 0; i < n; i++) {
		if ((force >= 0 && cs[i].v != force) || (tc_g.test_alg >= 0 && cs[i].p.alg != tc_g.test_alg))
			continue;
		double t = tc_predict(c, k, (enum tc_variant)cs[i].v, &cs[i].p);
		if (tc_g.verbose >= 2 && c->rank == 0) {
			char name[160];
			tc_describe(k->op, cs[i].v, &cs[i].p, name, sizeof(name));
			if (t > 0)
				fprintf(stderr, "topocoll: %s, %lld bytes on %d ranks: predicted %.1f us %s, %.1f us the MPI's own\n",
					tc_op_name[k->op], k->bytes, c->size, t * 1e6, name, ch->t_native * 1e6);
			else
				fprintf(stderr, "topocoll: %s, %lld bytes on %d ranks: %s not timed, %.1f us the MPI's own\n",
					tc_op_name[k->op], k->bytes, c->size, name, ch->t_native * 1e6);
		}
		if (t > 0 && (ch->t_best < 0 || t < ch->t_best)) {
			double tn = ch->t_native;
			*ch = cs[i].p;
			ch->t_native = tn;
			ch->t_best = t;
			ch->best = cs[i].v;
		}
	}
	free(cs);
}

/* The rule (docs/collectives.md): topocoll's best runs only if, with each
 * prediction off by its measured error against it, it still runs at 0.98x
 * of the MPI's own: t (1 + e_plan) <= t_native (1 - e_native) / 0.98.
 * TOPOCOLL_MARGIN, where set, is the speed-up asked instead. */
static int keeps(const struct tc_choice *ch)
{
	if (ch->t_best <= 0 || ch->t_native <= 0)
		return 0;
	if (tc_g.margin > 0)
		return ch->t_best * tc_g.margin <= ch->t_native;
	return ch->t_best * (1 + tc_g.err_plan) <= ch->t_native * (1 - tc_g.err_native) / 0.98;
}

/* The defaults of a forced family where nothing could be predicted. */
static void defaults(const struct tc_comm *c, const struct tc_call *k, struct tc_choice *ch, int v)
{
	struct cand cs[TC_CANDS];
	int n = candidates(c, k, cs);
	for (int i = 0; i < n; i++)
		if (cs[i].v == v) {
			double tn = ch->t_native;
			*ch = cs[i].p;
			ch->t_native = tn;
			ch->best = (signed char)v;
			return;
		}
	ch->best = TC_V_NATIVE;
}

/* TOPOCOLL_TEST_CYCLE: every call the next of the candidates (of the
 * forced family, of TOPOCOLL_TEST_ALG), unpredicted and not kept: the
 * same on every rank, which call in turn alike. For tests. */
static enum tc_variant cycle(struct tc_comm *c, const struct tc_call *k, int force, struct tc_choice **chp)
{
	struct cand cs[TC_CANDS];
	int n = candidates(c, k, cs), m = 0;
	for (int i = 0; i < n; i++)
		if ((force < 0 || cs[i].v == force) && (tc_g.test_alg < 0 || cs[i].p.alg == tc_g.test_alg))
			cs[m++] = cs[i];
	*chp = &c->cycled;
	if (!m)
		return TC_V_NATIVE;
	c->cycled = cs[c->ncycle++ % (unsigned)m].p;
	c->cycled.best = c->cycled.variant;
	c->cycled.t_native = c->cycled.t_best = -1;
	return (enum tc_variant)c->cycled.variant;
}

/* ---- choices kept across congruent communicators ----------------------------------------- */

/* Libraries make many communicators of the same ranks (FFTW's plans each
 * dup MPI_COMM_WORLD), and rank 0's prediction costs CPU time that every
 * rank waits for. So the rank that predicts keeps what it predicted per
 * (the communicator's world ranks in order, collective, size class) and
 * answers a congruent communicator's first call from it. Only the
 * predicting rank looks and it still broadcasts the answer, so a miss on
 * one process and a hit on another cannot make the ranks disagree. The
 * budget: TC_KEPT_MAX choices and TC_KEPT_RANKS world ranks stored for
 * them; beyond, predictions are not kept. MPI_THREAD_MULTIPLE calls on
 * several communicators at once are not supported (as for tc_g). */
#define TC_KEPT_MAX 4096
#define TC_KEPT_RANKS (1 << 20)
#define TC_MSG 14
struct kept {
	uint64_t hash;
	int size, slot;
	int *world;
	double msg[TC_MSG];
};
static struct {
	struct kept *v;
	int n;
	size_t ranks;
} kept;

static uint64_t world_hash(const struct tc_comm *c)
{
	uint64_t h = 1469598103934665603ull;
	for (int r = 0; r < c->size; r++) {
		h ^= (uint64_t)(unsigned)c->world[r];
		h *= 1099511628211ull;
	}
	return h ^ (uint64_t)c->size;
}

static struct kept *kept_find(const struct tc_comm *c, uint64_t h, int slot)
{
	for (int i = 0; i < kept.n; i++) {
		struct kept *e = &kept.v[i];
		if (e->hash == h && e->slot == slot && e->size == c->size &&
		    !memcmp(e->world, c->world, (size_t)c->size * sizeof(int)))
			return e;
	}
	return NULL;
}

static void kept_add(const struct tc_comm *c, uint64_t h, int slot, const double *msg)
{
	if (!kept.v && !(kept.v = malloc(TC_KEPT_MAX * sizeof(*kept.v))))
		return;
	if (kept.n >= TC_KEPT_MAX || kept.ranks + (size_t)c->size > TC_KEPT_RANKS)
		return;
	struct kept *e = &kept.v[kept.n];
	if (!(e->world = malloc((size_t)c->size * sizeof(int))))
		return;
	memcpy(e->world, c->world, (size_t)c->size * sizeof(int));
	e->hash = h;
	e->size = c->size;
	e->slot = slot;
	memcpy(e->msg, msg, sizeof(e->msg));
	kept.ranks += (size_t)c->size;
	kept.n++;
}

void tc_kept_free(void)
{
	for (int i = 0; i < kept.n; i++)
		free(kept.v[i].world);
	free(kept.v);
	kept.v = NULL;
	kept.n = 0;
	kept.ranks = 0;
}

static void choice_pack(const struct tc_choice *ch, double *msg)
{
	double v[TC_MSG] = { ch->variant, ch->best,   ch->alg,  ch->shape,	  ch->k[0],  ch->k[1],   ch->k[2],
			     ch->seq,	  ch->hier,   ch->rankorder, (double)ch->seg, ch->t_native, ch->t_best, ch->sync };
	memcpy(msg, v, sizeof(v));
}

static void choice_unpack(struct tc_choice *ch, const double *msg)
{
	ch->variant = (signed char)msg[0];
	ch->best = (signed char)msg[1];
	ch->alg = (int)msg[2];
	ch->shape = (int)msg[3];
	for (int i = 0; i < 3; i++)
		ch->k[i] = (int)msg[4 + i];
	ch->seq = (int)msg[7];
	ch->hier = (int)msg[8];
	ch->rankorder = (int)msg[9];
	ch->seg = (long long)msg[10];
	ch->t_native = msg[11];
	ch->t_best = msg[12];
	ch->sync = (int)msg[13];
}

/* Rank 0's answer for c's first call of k's class into msg: kept, or
 * predicted (and kept). */
static void choice_of(struct tc_comm *c, const struct tc_call *k, struct tc_choice *ch, int force, int slot,
		      double *msg)
{
	uint64_t h = c->world ? world_hash(c) : 0;
	const struct kept *e = c->world ? kept_find(c, h, slot) : NULL;
	if (e) {
		memcpy(msg, e->msg, sizeof(e->msg));
		return;
	}
	predict_all(c, k, ch, force);
	if (force >= 0 && ch->best != force)
		defaults(c, k, ch, force);
	ch->variant = force >= 0 ? ch->best : keeps(ch) ? ch->best : TC_V_NATIVE;
	choice_pack(ch, msg);
	if (c->world)
		kept_add(c, h, slot, msg);
}

enum tc_variant tc_choose(struct tc_comm *c, const struct tc_call *k, int force, char *why, size_t whyn,
			  struct tc_choice **chp)
{
	if (tc_g.test_cycle) {
		enum tc_variant v = cycle(c, k, force, chp);
		if (why)
			snprintf(why, whyn, "TOPOCOLL_TEST_CYCLE");
		return v;
	}
	int cls = tc_size_class(k->bytes), nc = k->op == TC_ALLREDUCE && !k->commute;
	struct tc_choice *ch = nc ? &c->choice_nc[cls] : &c->choice[k->op][cls];
	int forced = force >= 0;
	*chp = ch;
	if (ch->variant < 0) {
		double msg[TC_MSG] = { 0 };
		/* what the choice depends on besides the ranks: one slot per
		 * collective (and non-commuting Allreduce), class and forced family */
		int slot = ((nc ? TC_NOPS : k->op) * TC_CLASSES + cls) * (TC_NVARIANTS + 1) + force + 1;
		if (c->rank == 0)
			choice_of(c, k, ch, force, slot, msg);
		PMPI_Bcast(msg, TC_MSG, MPI_DOUBLE, 0, c->ucomm);
		choice_unpack(ch, msg);
	}
	if (why && forced) {
		if (tc_g.min_set)
			snprintf(why, whyn, "at or above TOPOCOLL_MIN_BYTES (%lld bytes per rank)", k->bytes);
		else
			snprintf(why, whyn, "TOPOCOLL_CHOICE=%s", tc_variant_key[tc_g.force]);
	} else if (why) {
		char name[160];
		tc_describe(k->op, ch->best, ch, name, sizeof(name));
		snprintf(why, whyn, "%lld bytes: predicted %.1f us the MPI's own, %.1f us %s (%.2fx%s)", k->bytes,
			 ch->t_native * 1e6, ch->t_best * 1e6, ch->best == TC_V_NATIVE ? "at best" : name,
			 ch->t_best > 0 ? ch->t_native / ch->t_best : 0.0,
			 ch->variant == ch->best ? "" : tc_g.margin > 0 ? ", below the margin" : ", not faster by the rule");
	}
	return (enum tc_variant)ch->variant;
}
