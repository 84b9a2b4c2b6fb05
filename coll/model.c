/*
 * model.c - how long a collective takes, predicted on the job's delay
 * matrix (topo.c), for the MPI's own algorithm and for each hierarchical
 * variant, so that a call goes hierarchical only where that is predicted
 * faster by TOPOCOLL_MARGIN (docs/collectives.md, "How it chooses").
 *
 * A message from a to b of B bytes takes latency(a, b) + B / rate(a, b):
 * the cost model's single flow (docs/cost-model.md), its latency that of
 * the route and its rate that of the route's slowest cable. Besides, a
 * host's cable sends one message at a time and receives one at a time (a
 * root sending to 15 leaders pays 15 times the bytes), and a rank sends
 * only what it already has. Cables shared inside the fabric are not
 * counted: where the hierarchy saves anything it is on exactly those
 * cables, so the model errs towards the MPI's own.
 *
 * The MPI's own algorithms are modelled by the decision rules their
 * sources document, as SimGrid's SMPI selectors carry them (Open MPI's
 * coll/tuned fixed decision; MPICH's size thresholds): binomial trees,
 * pipelines and chains of segments, the flat-tree pipeline, scatter then
 * allgather (recursive doubling or ring), recursive doubling, Rabenseifner
 * and ring allreduces, binomial and linear gathers and scatters. The
 * hierarchical variants call the MPI's own on the leaves' and leaders'
 * communicators, so they are the same models on those ranks.
 *
 * Everything here depends only on values all ranks hold alike: every rank
 * predicts the same and chooses the same.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

const char *const tc_variant_name[TC_NVARIANTS] = { "the MPI's own", "hierarchical", "hierarchical, leaders depth-first",
						    "hierarchical, leaders breadth-first",
						    "hierarchical, pipelined over the leaders",
						    "topod's schedule", "ring in the fabric's order",
						    "hosts gathered, their leaders' ring in the fabric's order",
						    "leaf-hierarchical", "topod's allgather schedule" };

struct sim {
	const struct tc_comm *c;
	double *t, *out, *in, *snap;  /* [size]: has the data, send side free, receive side free, round start */
	int round;                    /* sends use snap[] (a round of simultaneous exchanges) */
};

static double maxd(double a, double b)
{
	return a > b ? a : b;
}

/* s sends B bytes to d once s has them (or at `at` if >= 0); returns the arrival. */
static double send_at(struct sim *S, int s, int d, double B, double at)
{
	double lat, rate;
	tc_delay(S->c, s, d, &lat, &rate);
	double x = B / rate, start = maxd(at >= 0 ? at : S->round ? S->snap[s] : S->t[s], S->out[s]);
	S->out[s] = start + x;
	double arr = maxd(start + lat + x, S->in[d] + x);
	S->in[d] = arr;
	return arr;
}

static void send(struct sim *S, int s, int d, double B)
{
	double arr = send_at(S, s, d, B, -1);
	S->t[d] = maxd(S->t[d], arr);
}

static void round_begin(struct sim *S)
{
	memcpy(S->snap, S->t, (size_t)S->c->size * sizeof(double));
	S->round = 1;
}

static void round_end(struct sim *S)
{
	S->round = 0;
}

static int pof2_below(int k)
{
	int p = 1;
	while (p * 2 <= k)
		p *= 2;
	return p;
}

static int lowbit(int v)
{
	return v & -v;
}

/* m[0..k) the ranks in the sub-communicator's order, ri the root's index. */
#define M(v) m[((v) + ri) % k]

static void binomial_bcast(struct sim *S, const int *m, int k, int ri, double B)
{
	int top = 1;
	while (top < k)
		top *= 2;
	for (int v = 0; v < k; v++)
		for (int mask = (v ? lowbit(v) : top) / 2; mask >= 1; mask /= 2)
			if (v + mask < k)
				send(S, M(v), M(v + mask), B);
}

/* A chain (fanout 1) or binary tree (fanout 2) of segments, or a flat tree
 * (fanout 0): every segment follows the one before. */
static void seg_tree(struct sim *S, const int *m, int k, int ri, double B, double seg, int fanout)
{
	int nseg = B > seg ? (int)ceil(B / seg) : 1;
	double *a = malloc((size_t)k * sizeof(double));
	if (!a)
		return;
	for (int s = 0; s < nseg; s++) {
		double sb = s + 1 < nseg ? seg : B - seg * (nseg - 1);
		a[0] = S->t[M(0)];
		for (int v = 1; v < k; v++)
			a[v] = -1;
		for (int v = 0; v < k; v++) {
			int c0 = fanout ? fanout * v + 1 : (v ? k : 1), c1 = fanout ? fanout * v + fanout : k - 1;
			for (int ch = c0; ch <= c1 && ch < k; ch++)
				a[ch] = send_at(S, M(v), M(ch), sb, a[v]);
		}
		for (int v = 1; v < k; v++)
			S->t[M(v)] = maxd(S->t[M(v)], a[v]);
	}
	free(a);
}

/* Binomial scatter of B (each subtree its share), as MPICH's bcast and
 * both MPIs' scatters do; per = bytes per rank. */
static void binomial_scatter(struct sim *S, const int *m, int k, int ri, double per)
{
	int top = 1;
	while (top < k)
		top *= 2;
	for (int v = 0; v < k; v++)
		for (int mask = (v ? lowbit(v) : top) / 2; mask >= 1; mask /= 2)
			if (v + mask < k) {
				int sub = mask < k - v - mask ? mask : k - v - mask;
				send(S, M(v), M(v + mask), per * sub);
			}
}

/* Subtrees by size, smallest first: the order their data reaches a parent. */
static void binomial_gather(struct sim *S, const int *m, int k, int ri, double per)
{
	for (int mask = 1; mask < k; mask *= 2)
		for (int v = mask; v < k; v += 2 * mask) {
			int sub = mask < k - v ? mask : k - v;
			send(S, M(v), M(v - mask), per * sub);
		}
}

static void linear_gather(struct sim *S, const int *m, int k, int ri, double per)
{
	for (int v = 1; v < k; v++)
		send(S, M(v), M(0), per);
}

static void linear_scatter(struct sim *S, const int *m, int k, int ri, double per)
{
	for (int v = 1; v < k; v++)
		send(S, M(0), M(v), per);
}

/* k-1 rounds: each rank passes `per` bytes to the next. */
static void ring(struct sim *S, const int *m, int k, double per)
{
	for (int r = 0; r + 1 < k; r++) {
		round_begin(S);
		for (int v = 0; v < k; v++)
			send(S, m[v], m[(v + 1) % k], per);
		round_end(S);
	}
}

/* Recursive doubling among the first pof2 ranks: round i swaps bytes(i). */
static void rdb(struct sim *S, const int *m, int pof2, double B, double grow)
{
	double b = B;
	for (int mask = 1; mask < pof2; mask *= 2, b *= grow) {
		round_begin(S);
		for (int v = 0; v < pof2; v++)
			send(S, m[v], m[v ^ mask], b);
		round_end(S);
	}
}

/* The ranks beyond the largest power of two hand their data to a partner
 * first and get the result back last (MPICH's and Open MPI's rdb). */
static void fold(struct sim *S, const int *m, int k, double B, int back)
{
	int rest = k - pof2_below(k);
	for (int v = 0; v < rest; v++)
		if (back)
			send(S, m[v], m[pof2_below(k) + v], B);
		else
			send(S, m[pof2_below(k) + v], m[v], B);
}

static void allreduce_rdb(struct sim *S, const int *m, int k, double B)
{
	fold(S, m, k, B, 0);
	rdb(S, m, pof2_below(k), B, 1.0);
	fold(S, m, k, B, 1);
}

/* Rabenseifner: recursive halving, then doubling back. */
static void allreduce_rab(struct sim *S, const int *m, int k, double B)
{
	int p = pof2_below(k);
	fold(S, m, k, B, 0);
	rdb(S, m, p, B / 2, 0.5);
	rdb(S, m, p, B / p, 2.0);
	fold(S, m, k, B, 1);
}

static void tc_native(struct sim *S, enum tc_op op, const int *m, int k, int ri, double B);

/* A k-nomial tree (radix r), whole message on every edge. */
static void knomial_bcast(struct sim *S, const int *m, int k, int ri, double B, int radix)
{
	int top = 1;
	while (top < k)
		top *= radix;
	for (int v = 0; v < k; v++) {
		int mask = top;
		if (v)
			for (mask = 1; (v / mask) % radix == 0; mask *= radix)
				;
		for (int mk = mask / radix; mk >= 1; mk /= radix)
			for (int j = 1; j < radix; j++)
				if (v + j * mk < k)
					send(S, M(v), M(v + j * mk), B);
	}
}

/* Open MPI 4.1's coll/tuned fixed Bcast decision (its table by
 * communicator size and bytes, as SMPI's ompi selector carries it):
 * 1 linear pipeline, 2-3 pipeline, 4 split binary tree, 5 binary tree,
 * 6 binomial, 7 k-nomial, 8 scatter + recursive-doubling allgather. */
static int ompi_bcast_alg(int k, double B)
{
	if (k < 4)
		return B < 32768 ? 1 : B < 131072 ? 5 : B < 262144 ? 2 : B < 524288 ? 1 : B < 1048576 ? 6 : 5;
	if (k < 8)
		return B < 2048 ? 5 : B < 8192 ? 6 : B < 1048576 ? 1 : 2;
	if (k < 16)
		return B < 4096 ? 7 : B < 16384 ? 5 : B < 32768 ? 6 : 1;
	if (k < 32)
		return B < 4096 ? 7 : B < 1048576 ? 6 : 8;
	if (k < 64)
		return B < 2048 ? 6 : 7;
	if (k < 128)
		return 7;
	if (k < 256)
		return B < 16384 ? 5 : B < 32768 ? 1 : B < 65536 ? 5 : 7;
	return B < 16384 ? 7 : B < 32768 ? 4 : 7;
}

static void scatter_allgather(struct sim *S, const int *m, int k, int ri, double B, int use_ring)
{
	binomial_scatter(S, m, k, ri, B / k);
	int *r = malloc((size_t)k * sizeof(int));
	if (!r)
		return;
	for (int v = 0; v < k; v++)
		r[v] = M(v);
	if (!use_ring && pof2_below(k) == k)
		rdb(S, r, k, B / k, 2.0);
	else
		ring(S, r, k, B / k);
	free(r);
}

static void bcast_native(struct sim *S, const int *m, int k, int ri, double B)
{
	if (k < 2)
		return;
	if (tc_g.model_mpich) {
		/* SMPI's MPICH selector: an SMP-aware binomial tree on jobs with
		 * the same ranks on every host (one per host in the benchmark);
		 * else binomial for small messages or <= 8 ranks, scatter then
		 * allgather above */
		if (B < 12288 || k <= 8 || tc_g.model_mpich == 1)
			binomial_bcast(S, m, k, ri, B);
		else
			scatter_allgather(S, m, k, ri, B, !(B < 524288 && k % 2 == 0));
		return;
	}
	/* The linear and binary pipelines post every segment at once: the
	 * segments share each cable and arrive together, so each hop carries
	 * the whole message before the next starts (measured in SMPI). */
	switch (ompi_bcast_alg(k, B)) {
	case 1:
		seg_tree(S, m, k, ri, B, B, 1);
		break;
	case 2:
	case 3:
		seg_tree(S, m, k, ri, B, B >= 1048576 ? 131072 : 16384, 1);
		break;
	case 4:
	case 5:
		seg_tree(S, m, k, ri, B, B, 2);
		break;
	case 6:
		binomial_bcast(S, m, k, ri, B);
		break;
	case 7:
		knomial_bcast(S, m, k, ri, B, 4);
		break;
	default:
		scatter_allgather(S, m, k, ri, B, 0);
		break;
	}
}

static void reduce_native(struct sim *S, const int *m, int k, int ri, double B)
{
	if (k < 2)
		return;
	if (tc_g.model_mpich ? B <= 2048 : (B < 2048 || (k < 8 && B < 20480) || k > 0.6016 / 1024 * B + 1.3496)) {
		/* binomial: every message whole, towards the root */
		for (int mask = 1; mask < k; mask *= 2)
			for (int v = mask; v < k; v += 2 * mask)
				send(S, M(v), M(v - mask), B);
		return;
	}
	if (tc_g.model_mpich) {
		/* reduce-scatter by halving, then a binomial gather of the pieces */
		int *r = malloc((size_t)k * sizeof(int)), p = pof2_below(k);
		if (!r)
			return;
		for (int v = 0; v < k; v++)
			r[v] = M(v);
		fold(S, r, k, B, 0);
		rdb(S, r, p, B / 2, 0.5);
		binomial_gather(S, r, p, 0, B / p);
		free(r);
		return;
	}
	/* Open MPI: a pipeline (chain) of segments towards the root */
	double seg = k > 0.0410 / 1024 * B + 9.7128 ? 1024 : 65536;
	int nseg = B > seg ? (int)ceil(B / seg) : 1;
	for (int s = 0; s < nseg; s++)
		for (int v = k - 1; v >= 1; v--)
			send(S, M(v), M(v - 1), s + 1 < nseg ? seg : B - seg * (nseg - 1));
}

static void allreduce_native(struct sim *S, const int *m, int k, double B)
{
	if (k < 2)
		return;
	/* MPICH: Rabenseifner above 2 KiB; Open MPI 4.1: recursive doubling
	 * below about 8 KiB, Rabenseifner above (commutative operations) */
	if (B > (tc_g.model_mpich ? 2048 : 8192) && k >= 4)
		allreduce_rab(S, m, k, B);
	else
		allreduce_rdb(S, m, k, B);
}

/* Allgather's rounds: every rank of m[k] sends b bytes to m[dst[v]] (-1:
 * none). Besides each rank's own cable (send()), a round's flows share the
 * host cables of hosts with several ranks, and the uplinks (downlinks) the
 * job's routes use off (into) each leaf (topo.c): no flow arrives before
 * its host's and its leaf's share of the round is through. Here, and only
 * here, the model counts cables inside the fabric: they are all a ring's
 * order changes (seed 002). */
struct agsh {
	double *lup, *ldown;   /* [nleaves] a leaf's uplinks' (downlinks') bytes/s, 0 unknown */
	double *fu, *fd;       /* [nleaves] this round's bytes up, down */
	double *ho, *hi;       /* [nhosts] this round's bytes out of, into a host */
	int *host;             /* [size] each rank's host */
};

/* What a round costs in SMPI beyond the route's latency (1 KiB rings' steps
 * took 1.0 us on routes of 0.6 us). Where SMPI's Open MPI selector once
 * seemed to run its neighbour exchange up to 1.9 times this model, it ran
 * recursive doubling or the ring: Open MPI 4.1's table, now modelled
 * (ompi_allgather_alg; docs/performance.md, Allgather). */
#define TC_AG_STEP 0.4e-6

static double ag_share(const struct sim *S, const struct agsh *a, int s, int d)
{
	int ls = S->c->leaf_of[s], ld = S->c->leaf_of[d];
	double lat, rate, x = 0;
	tc_delay(S->c, s, d, &lat, &rate);
	if (a->host[s] != a->host[d])
		x = maxd(a->ho[a->host[s]], a->hi[a->host[d]]) / rate;
	if (ls != ld && a->lup[ls] > 0)
		x = maxd(x, a->fu[ls] / a->lup[ls]);
	if (ls != ld && a->ldown[ld] > 0)
		x = maxd(x, a->fd[ld] / a->ldown[ld]);
	return lat + x + TC_AG_STEP;
}

static void ag_round(struct sim *S, const struct agsh *a, const int *m, int k, const int *dst, double b)
{
	const struct tc_comm *c = S->c;
	memset(a->fu, 0, (size_t)c->nleaves * sizeof(double));
	memset(a->fd, 0, (size_t)c->nleaves * sizeof(double));
	memset(a->ho, 0, (size_t)tc_g.topo.nhosts * sizeof(double));
	memset(a->hi, 0, (size_t)tc_g.topo.nhosts * sizeof(double));
	for (int v = 0; v < k; v++) {
		if (dst[v] < 0)
			continue;
		int s = m[v], d = m[dst[v]];
		if (a->host[s] != a->host[d]) {
			a->ho[a->host[s]] += b;
			a->hi[a->host[d]] += b;
		}
		if (c->leaf_of[s] != c->leaf_of[d]) {
			a->fu[c->leaf_of[s]] += b;
			a->fd[c->leaf_of[d]] += b;
		}
	}
	round_begin(S);
	for (int v = 0; v < k; v++) {
		if (dst[v] < 0)
			continue;
		int s = m[v], d = m[dst[v]];
		send(S, s, d, b);
		S->t[d] = maxd(S->t[d], S->snap[s] + ag_share(S, a, s, d));
	}
	round_end(S);
}

/* Open MPI 4.1's fixed decision for Allgather (coll/tuned; SMPI 3.32's
 * ompi selector carries the same table), by communicator size and the
 * block's bytes: for the first row with k < kmax, the first threshold
 * B < bmax[i] names alg[i] (1 ring, 2 recursive doubling, 3 Bruck, 4
 * neighbour exchange; 0 ends a row: the last alg holds above). */
static int ompi_allgather_alg(int k, double B)
{
	static const struct {
		int kmax;
		double bmax[8];
		unsigned char alg[8];
	} row[] = {
		{ 32, { 0 }, { 2 } },
		{ 64, { 1024, 65536, 0 }, { 2, 4, 1 } },
		{ 128, { 512, 65536, 0 }, { 2, 4, 1 } },
		{ 256, { 512, 131072, 524288, 1048576, 0 }, { 2, 4, 1, 4, 1 } },
		{ 512, { 32, 128, 1024, 131072, 524288, 1048576, 0 }, { 2, 3, 2, 4, 1, 4, 1 } },
		{ 1024, { 64, 256, 2048, 0 }, { 2, 3, 2, 4 } },
		{ 2048, { 4, 8, 16, 32, 256, 512, 4096, 0 }, { 2, 3, 2, 3, 2, 3, 2, 4 } },
		{ 4096, { 32, 128, 512, 4096, 0 }, { 3, 2, 3, 2, 4 } },
		{ INT_MAX, { 2, 8, 16, 512, 4096, 0 }, { 2, 3, 2, 3, 2, 4 } },
	};
	int r = 0, i = 0;
	while (k >= row[r].kmax)
		r++;
	while (row[r].bmax[i] > 0 && B >= row[r].bmax[i])
		i++;
	return row[r].alg[i];
}

/* The MPIs' allgathers on m[k], B bytes per rank, as SMPI's selectors
 * choose them: Open MPI 4.1's table (ompi_allgather_alg; 2 ranks: one
 * exchange; recursive doubling on a size not a power of two runs as Bruck,
 * neighbour exchange on an odd size as the ring, as both MPIs do), MPICH's
 * (recursive doubling on powers of two under 512 KiB in all, Bruck up to
 * 80 KiB, else the ring). alg: 0 the MPI's choice, 1 topocoll's ring in
 * m's order. */
static void allgather_rounds(struct sim *S, const struct agsh *a, const int *m, int k, double B, int alg)
{
	int ring = alg == 1;
	int *dst = malloc((size_t)k * sizeof(int)), pof2 = pof2_below(k) == k;
	double tot = B * k;
	if (!dst || k < 2) {
		free(dst);
		return;
	}
	if (!alg && !tc_g.model_mpich) {
		alg = k == 2 ? 2 : ompi_allgather_alg(k, B);
		alg = alg == 2 && !pof2 ? 3 : alg == 4 && k % 2 ? 1 : alg;
	} else if (!alg) {
		alg = k == 2 || (pof2 && tot < 524288) ? 2 : tot <= 81920 ? 3 : 1;
	}
	/* SMPI's ring (allgather__ring, under both its selectors) sends its own
	 * block to v + r + 1 in round r: a shift by ever more ranks, not a ring */
	int shift = alg == 1 && ring == 0 && tc_g.model_smpi;
	if (alg == 1)
		for (int r = 0; r + 1 < k; r++) {
			for (int v = 0; v < k; v++)
				dst[v] = (v + (shift ? r + 1 : 1)) % k;
			ag_round(S, a, m, k, dst, B);
		}
	else if (alg == 2)   /* recursive doubling (k a power of two, or 2) */
		for (int mask = 1; mask < k; mask *= 2) {
			for (int v = 0; v < k; v++)
				dst[v] = v ^ mask;
			ag_round(S, a, m, k, dst, B * mask);
		}
	else if (alg == 3)   /* Bruck: to v - 2^j */
		for (int dist = 1; dist < k; dist *= 2) {
			for (int v = 0; v < k; v++)
				dst[v] = (v - dist + k) % k;
			ag_round(S, a, m, k, dst, B * (dist < k - dist ? dist : k - dist));
		}
	else                 /* neighbour exchange: pairs alternate, two blocks a step after the first */
		for (int i = 0; i < k / 2; i++) {
			for (int v = 0; v < k; v++)
				dst[v] = i % 2 == 0 ? v ^ 1 : v % 2 ? (v + 1) % k : (v - 1 + k) % k;
			ag_round(S, a, m, k, dst, i ? 2 * B : B);
		}
	free(dst);
}

/* Gathered at group leaders (allgather.c): every group's Gatherv at its
 * leader (the MPIs' Gatherv is linear; within a host at the memory's rate,
 * tc_delay), the leaders' exchange of whole groups (hosts: the ring in the
 * fabric's order; leaves: the MPI's own allgather among the leaders), each
 * leader's Bcast of the result to its group, and every rank's unpacking of
 * the result from its packed copy, at the memory's rate. The leaders'
 * blocks are taken as the largest group's: with uneven groups each step
 * waits for the largest. */
static void grouped_sim(struct sim *S, const struct agsh *a, double B, int hosts)
{
	const struct tc_comm *c = S->c;
	int ng = hosts ? c->nhosts : c->nleaves, maxg = hosts ? c->maxhost : c->maxleaf;
	const int *order = hosts ? c->horder : c->lorder, *first = hosts ? c->hfirst : c->lfirst;
	int *lead = malloc((size_t)(ng > 0 ? ng : 1) * sizeof(int));
	double lat, shm;
	if (!lead || ng < 1) {
		free(lead);
		return;
	}
	for (int g = 0; g < ng; g++) {
		lead[g] = order[first[g]];
		linear_gather(S, order + first[g], first[g + 1] - first[g], 0, B);
	}
	allgather_rounds(S, a, lead, ng, B * maxg, hosts);
	for (int g = 0; g < ng; g++)
		bcast_native(S, order + first[g], first[g + 1] - first[g], 0, B * c->size);
	for (int r = 0; r < c->size; r++) {
		tc_delay(c, r, r, &lat, &shm);
		S->t[r] += B * c->size / shm;
	}
	free(lead);
}

/* The MPI's allgather (TC_V_NATIVE) or one of topocoll's (TC_V_RING,
 * TC_V_HOSTS, TC_V_LEAVES) on the whole communicator. */
static void allgather_sim(struct sim *S, int *m, double B, enum tc_variant v)
{
	const struct tc_comm *c = S->c;
	const struct tc_topo *t = &tc_g.topo;
	size_t nl = (size_t)c->nleaves, nh = (size_t)t->nhosts;
	double *mem = calloc(4 * nl + 2 * nh, sizeof(double));
	struct agsh a = { .host = malloc((size_t)c->size * sizeof(int)) };
	if (!mem || !a.host || !t->up_bw) {
		free(mem);
		free(a.host);
		return;
	}
	a.lup = mem;
	a.ldown = mem + nl;
	a.fu = mem + 2 * nl;
	a.fd = mem + 3 * nl;
	a.ho = mem + 4 * nl;
	a.hi = mem + 4 * nl + nh;
	for (int r = 0; r < c->size; r++) {
		int h = t->host_of[c->world[r]], L = c->leaf_of[r];
		a.host[r] = h;
		a.lup[L] = maxd(a.lup[L], t->up_bw[h]);
		a.ldown[L] = maxd(a.ldown[L], t->down_bw[h]);
	}
	if (v != TC_V_NATIVE) {
		/* the ranks' agreement (allgather.c) first */
		for (int r = 0; r < c->size; r++)
			m[r] = r;
		allreduce_native(S, m, c->size, 4);
	}
	if (v == TC_V_RING) {
		tc_ring_order(c, m);
		allgather_rounds(S, &a, m, c->size, B, 1);
	} else if (v == TC_V_HOSTS || v == TC_V_LEAVES) {
		grouped_sim(S, &a, B, v == TC_V_HOSTS);
	} else {
		allgather_rounds(S, &a, m, c->size, B, 0);
	}
	free(mem);
	free(a.host);
}

static void tc_native(struct sim *S, enum tc_op op, const int *m, int k, int ri, double B)
{
	switch (op) {
	case TC_BCAST:
		bcast_native(S, m, k, ri, B);
		break;
	case TC_GATHER:
		/* Open MPI 4.1: binomial from 8 ranks; below, by total bytes */
		if (tc_g.model_mpich || k >= 8 || B * k < 1024 || (B * k >= 8192 && B * k < 32768))
			binomial_gather(S, m, k, ri, B);
		else
			linear_gather(S, m, k, ri, B);
		break;
	case TC_SCATTER:
		if (tc_g.model_mpich || (k >= 4 && B * k < (k < 8 ? 2048 : k < 64 ? 16384 : 512)))
			binomial_scatter(S, m, k, ri, B);
		else
			linear_scatter(S, m, k, ri, B);
		break;
	case TC_ALLREDUCE:
		allreduce_native(S, m, k, B);
		break;
	default:
		break;
	}
}

/* The ranks of leaf L, in rank order (its leader first); returns how many. */
static int leaf_members(const struct tc_comm *c, int L, int *m)
{
	int k = 0;
	for (int r = 0; r < c->size; r++)
		if (c->leaf_of[r] == L)
			m[k++] = r;
	return k;
}

/* The leaders' Bcast (in the given leaf order, root's leaf first when
 * ordered) then each leaf's. */
static void hier_bcast(struct sim *S, int *m, int *lead, const int *order, int root, double B)
{
	const struct tc_comm *c = S->c;
	int rl = c->leaf_of[root], ri = 0;
	for (int i = 0; i < c->nleaves; i++) {
		lead[i] = c->leader[order ? order[i] : i];
		if ((order ? order[i] : i) == rl)
			ri = i;
	}
	if (root != c->leader[rl])
		send(S, root, c->leader[rl], B);
	bcast_native(S, lead, c->nleaves, ri, B);
	for (int L = 0; L < c->nleaves; L++) {
		int k = leaf_members(c, L, m);
		bcast_native(S, m, k, 0, B);
	}
}

/* The agreement (a 4-byte allreduce), then the chain of segments
 * (hier.c's tc_chain_order): each rank forwards a segment once it has it. */
static void pipe_bcast(struct sim *S, int *m, int *order, int root, double B, double seg)
{
	const struct tc_comm *c = S->c;
	for (int r = 0; r < c->size; r++)
		m[r] = r;
	allreduce_native(S, m, c->size, 4);
	tc_chain_order((struct tc_comm *)c, root, order, m);
	seg_tree(S, m, c->size, 0, B, seg, 1);
}

static void hier_gather(struct sim *S, int *m, int root, double B, int scatter)
{
	const struct tc_comm *c = S->c;
	int rl = c->leaf_of[root];
	/* hier.c's agreement first: a 4-byte allreduce over every rank */
	for (int r = 0; r < c->size; r++)
		m[r] = r;
	allreduce_native(S, m, c->size, 4);
	if (scatter) {
		/* the root's Isends to every other leader, then each leaf's scatter */
		for (int L = 0; L < c->nleaves; L++)
			if (c->leader[L] != root)
				send(S, root, c->leader[L], B * c->leaf_size[L]);
		for (int L = 0; L < c->nleaves; L++) {
			int k = leaf_members(c, L, m);
			tc_native(S, TC_SCATTER, m, k, 0, B);
		}
		return;
	}
	for (int L = 0; L < c->nleaves; L++) {
		int k = leaf_members(c, L, m);
		tc_native(S, TC_GATHER, m, k, 0, B);
	}
	for (int L = 0; L < c->nleaves; L++)
		if (c->leader[L] != root)
			send(S, c->leader[L], root, B * c->leaf_size[L]);
	(void)rl;
}

static void hier_allreduce(struct sim *S, int *m, int *lead, double B)
{
	const struct tc_comm *c = S->c;
	for (int L = 0; L < c->nleaves; L++) {
		int k = leaf_members(c, L, m);
		reduce_native(S, m, k, 0, B);
	}
	for (int L = 0; L < c->nleaves; L++)
		lead[L] = c->leader[L];
	allreduce_native(S, lead, c->nleaves, B);
	for (int L = 0; L < c->nleaves; L++) {
		int k = leaf_members(c, L, m);
		bcast_native(S, m, k, 0, B);
	}
}

long long tc_pipe_segment(long long bytes, int ranks)
{
	/* (bytes/seg + ranks - 2) steps of seg/rate + latency are shortest at
	 * seg = sqrt(bytes x latency x rate / (ranks - 2)); latency x rate
	 * taken as 4 KiB (about 1 us of software and switches at 4 GB/s); the
	 * power of two at or above, in [64 KiB, 1 MiB], at most 4,096 segments.
	 * Not below 64 KiB: smaller sends are eager (SMPI's detached sends,
	 * the MPIs' eager protocols), complete at once at the sender and so
	 * stop pacing the chain: in SMPI 8 KiB segments shared the cable and
	 * ran 10 times slower. */
	long long seg = 65536, k = ranks > 3 ? ranks - 2 : 1;
#ifdef TOPOCOLL_SEG_EXPERIMENT
	if (getenv("TOPOCOLL_SEG"))
		return atoll(getenv("TOPOCOLL_SEG"));
#endif
	while (seg < 1048576 && (double)seg * seg * k < (double)bytes * 4096)
		seg *= 2;
	while (seg < 1048576 && seg * 4096 < bytes)
		seg *= 2;
	return seg;
}

/* topod's allgather schedule for blocks of `bytes`: topod predicted it
 * for the blocks it was asked for, beside its ring in the fabric's order,
 * which is what TC_V_RING runs; that ratio applied to this model's ring.
 * Only where the ratio was measured to hold: from TOPOCOLL_ALLGATHER_MIN
 * and 64 KiB a block (below, the schedule's P-1 latency-bound steps err
 * as the ring's do, tree_penalty), and only beside topod's ring time (a
 * time scaled by bytes alone would drop the latencies). */
static double agsched_predict(struct tc_comm *c, long long bytes)
{
	const struct tc_agsched *s = c->agsched;
	if (!s || s->time_s <= 0 || !s->bytes || s->agring_s <= 0 || bytes < tc_g.ag_min || bytes < 65536)
		return -1;
	double r = tc_predict(c, TC_ALLGATHER, TC_V_RING, bytes, 0, 0);
	return r > 0 ? r * s->time_s / s->agring_s : -1;
}

double tc_predict(struct tc_comm *c, enum tc_op op, enum tc_variant v, long long bytes, int root, long long seg)
{
	if (v == TC_V_AGSCHED)
		return op == TC_ALLGATHER ? agsched_predict(c, bytes) : -1;
	struct sim S = { .c = c };
	size_t n = (size_t)c->size;
	double *mem = calloc(4 * n, sizeof(double));
	int *m = malloc(n * sizeof(int)), *lead = malloc(((size_t)c->nleaves + 1) * sizeof(int));
	int *order = malloc(((size_t)c->nleaves + 1) * sizeof(int));
	double B = (double)bytes, t = -1;
	if (!mem || !m || !lead || !order)
		goto out;
	S.t = mem;
	S.out = mem + n;
	S.in = mem + 2 * n;
	S.snap = mem + 3 * n;
	for (int r = 0; r < c->size; r++)
		m[r] = r;
	if (op == TC_ALLGATHER && (v == TC_V_NATIVE || v == TC_V_RING || v == TC_V_LEAVES ||
				   (v == TC_V_HOSTS && c->nhosts)))
		allgather_sim(&S, m, B, v);
	else if (v == TC_V_NATIVE)
		tc_native(&S, op, m, c->size, op == TC_ALLREDUCE ? 0 : root, B);
	else if (op == TC_BCAST && v == TC_V_HIER)
		hier_bcast(&S, m, lead, NULL, root, B);
	else if (op == TC_BCAST && (v == TC_V_DFS || v == TC_V_BFS)) {
		tc_leader_order(c, c->leaf_of[root], v == TC_V_BFS, order);
		hier_bcast(&S, m, lead, order, root, B);
	} else if (op == TC_BCAST && v == TC_V_PIPE) {
		pipe_bcast(&S, m, order, root, B, (double)seg);
	} else if ((op == TC_GATHER || op == TC_SCATTER) && v == TC_V_HIER)
		hier_gather(&S, m, root, B, op == TC_SCATTER);
	else if (op == TC_ALLREDUCE && v == TC_V_HIER)
		hier_allreduce(&S, m, lead, B);
	else
		goto out;
	t = 0;
	for (size_t r = 0; r < n; r++)
		t = maxd(t, maxd(S.t[r], S.out[r]));
out:
	free(mem);
	free(m);
	free(lead);
	free(order);
	return t;
}

/* Closeness of two leaders: one message of 64 KiB between them. */
static double close_to(struct tc_comm *c, int a, int b)
{
	double lat, rate;
	if (!tc_g.topo.nworld || !c->world)
		return (b - a + c->nleaves) % c->nleaves;   /* no delays: leaf order from a */
	tc_delay(c, c->leader[a], c->leader[b], &lat, &rate);
	return lat + 65536.0 / rate;
}

/* Subramoni 2013, ch. 4: from the root's leader, depth-first (each next leader
 * the closest to the last one placed) or breadth-first (by closeness to
 * the root's leader); ties by leaf index, so every rank orders alike. */
void tc_leader_order(struct tc_comm *c, int from, int bfs, int *order)
{
	int n = c->nleaves;
	char *used = calloc((size_t)n, 1);
	order[0] = from;
	if (used)
		used[from] = 1;
	for (int i = 1; i < n; i++) {
		int best = -1;
		double bd = 0;
		for (int L = 0; L < n; L++) {
			if (used ? used[L] : L == from)
				continue;
			double d = close_to(c, bfs ? from : order[i - 1], L);
			if (best < 0 || d < bd) {
				best = L;
				bd = d;
			}
		}
		order[i] = best;
		if (used)
			used[best] = 1;
	}
	free(used);
}

int tc_size_class(long long bytes)
{
	int k = 0;
	while (bytes > 0 && k < TC_CLASSES - 1) {
		bytes >>= 1;
		k++;
	}
	return k;
}

/* The Bcast trees over leaders (hier, dfs, bfs) run the leaders' and the
 * leaves' broadcasts at once over shared uplinks, which the model does not
 * count: in SMPI they ran up to 1.26 times their prediction (ft3, 128
 * hosts), and at 1 KiB an extra level's message cost more than the
 * model's latencies (0.89x on ft2-mixed; docs/performance.md), so they
 * must be predicted faster by 1.3 times the margin. The chain loads each
 * cable once each way and is predicted to within 1-6 %. The hierarchical
 * Allreduce too: its three phases take more steps than the MPI's one
 * (8 B on 256 hosts in 32 leaves: 11 against recursive doubling's 8), and
 * each message costs more than its route's latency (in SMPI about 0.5 us:
 * recursive doubling ran 1.6-2 times its prediction there), so the hops
 * it saves were predicted 1.12x and ran 0.77x (1.29x and 0.98x on ft3).
 * Allgather's ring below 64 KiB a block: its P-1 steps are latency-bound,
 * and SMPI ran them at 1 KiB up to 1.69 times the prediction (16 ranks a
 * host on ft2-mixed: predicted 1.25x faster than Open MPI's own, ran
 * 0.62x); from 64 KiB within 1.07 (docs/performance.md, issue 25). */
static double tree_penalty(enum tc_op op, int v, long long bytes)
{
	if (op == TC_ALLGATHER)
		return v == TC_V_RING && bytes < 65536 ? 1.7 : 1.0;
	if (op == TC_ALLREDUCE)
		return v == TC_V_HIER ? 1.3 : 1.0;
	return op == TC_BCAST && (v == TC_V_HIER || v == TC_V_DFS || v == TC_V_BFS) ? 1.3 : 1.0;
}

enum tc_variant tc_choose(struct tc_comm *c, enum tc_op op, long long bytes, int root, char *why, size_t whyn,
			  struct tc_choice **chp)
{
	struct tc_choice *ch = &c->choice[op][tc_size_class(bytes)];
	*chp = ch;
	static const enum tc_variant cand[] = { TC_V_HIER,  TC_V_DFS,    TC_V_BFS,    TC_V_PIPE,
						TC_V_RING, TC_V_HOSTS, TC_V_LEAVES, TC_V_AGSCHED };
	double best_pen = 1.0;
	if (ch->variant < 0) {
		ch->t_native = tc_predict(c, op, TC_V_NATIVE, bytes, root, 0);
		ch->best = TC_V_NATIVE;
		ch->t_best = ch->t_native;
		ch->seg = tc_pipe_segment(bytes, c->size);
		for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]) && ch->t_native > 0; i++) {
			if (op == TC_ALLGATHER ? cand[i] < TC_V_RING || (cand[i] == TC_V_HOSTS && !c->nhosts) ||
							 (cand[i] == TC_V_AGSCHED && !c->agsched)
					       : (op != TC_BCAST && cand[i] != TC_V_HIER) || cand[i] >= TC_V_RING ||
							 (cand[i] == TC_V_PIPE && bytes < 65536))
				continue;
			/* the chain: the formula's segment, and half and twice it */
			for (int f = cand[i] == TC_V_PIPE ? -1 : 0; f <= (cand[i] == TC_V_PIPE ? 1 : 0); f++) {
				long long seg = f < 0 ? ch->seg / 2 : f > 0 ? ch->seg * 2 : ch->seg;
				if (cand[i] == TC_V_PIPE && (seg < 65536 || seg > bytes))
					continue;
				double t = tc_predict(c, op, cand[i], bytes, root, seg), pen = tree_penalty(op, cand[i], bytes);
				if (tc_g.verbose >= 2 && c->rank == 0)
					fprintf(stderr, "topocoll: %s, %lld bytes on %d ranks: predicted %.1f us %s, %.1f us the MPI's own\n",
						tc_op_name[op], bytes, c->size, t * 1e6, tc_variant_name[cand[i]], ch->t_native * 1e6);
				if (t > 0 && t * pen < ch->t_best * best_pen) {
					ch->t_best = t;
					best_pen = pen;
					ch->best = (signed char)cand[i];
					if (cand[i] == TC_V_PIPE)
						ch->seg = seg;
				}
			}
		}
		/* faster by the margin, or the MPI's own, untouched */
		ch->variant = ch->t_best * best_pen * tc_g.margin <= ch->t_native ? ch->best : TC_V_NATIVE;
	}
	if (why)
		snprintf(why, whyn, "%lld bytes: predicted %.1f us the MPI's own, %.1f us %s (%.2fx%s)", bytes,
			 ch->t_native * 1e6, ch->t_best * 1e6,
			 ch->best == TC_V_NATIVE ? "at best" : tc_variant_name[(int)ch->best],
			 ch->t_best > 0 ? ch->t_native / ch->t_best : 0.0,
			 ch->variant != ch->best ? ", below the margin" : "");
	return (enum tc_variant)ch->variant;
}
