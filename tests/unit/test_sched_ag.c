/* test_sched_ag.c - the allgather schedules (schedule.h): the MPIs' ring in
 * rank order, the ring in the fabric's order and Kumar and Kalé 2004's
 * kShift are correct allgathers for P = 1, 2, 3, primes and non-powers of
 * two, on contiguous, holed, cyclic and several-ranks-per-host jobs (an
 * independent check here: every rank receives every other rank's block
 * exactly once, from a rank that held it before the step; one send and one
 * receive per rank per step); the ring in the fabric's order loads every
 * cable with at most one flow per step (a 2-level over-subscribed tree and
 * a d-mod-k 3-level fat tree), where the rank-order ring does not on a
 * cyclic job; kShift on a whole d-mod-k fat tree is contention-free as the
 * theory says; advice answers agbest never slower than the ring. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice.h"
#include "hier.h"
#include "route.h"
#include "schedule.h"
#include "testfab.h"

/* 0 if s is a correct allgather of s->nranks ranks, else what is wrong. */
static const char *ag_ok(const struct sched *s)
{
	uint32_t P = s->nranks;
	static const char *why;
	uint8_t *has = calloc((size_t)P * P + 1, 1), *nxt = calloc((size_t)P * P + 1, 1);
	uint8_t *sent = calloc(P + 1, 1), *got = calloc(P + 1, 1);
	why = NULL;
	for (uint32_t r = 0; r < P; r++)
		has[(size_t)r * P + r] = nxt[(size_t)r * P + r] = 1;
	if (s->nsteps != (P ? P - 1 : 0))
		why = "not P-1 steps";
	for (uint32_t st = 0; !why && st < s->nsteps; st++) {
		memset(sent, 0, P);
		memset(got, 0, P);
		for (uint32_t f = s->step_off[st]; !why && f < s->step_off[st + 1]; f++) {
			uint32_t a = s->src[f], b = s->dst[f], o = s->blk[f];
			if (a >= P || b >= P || o >= P || a == b)
				why = "flow out of range";
			else if (sent[a]++ || got[b]++)
				why = "a rank sends or receives twice in a step";
			else if (!has[(size_t)a * P + o])
				why = "a rank forwards a block it does not hold yet";
			else if (nxt[(size_t)b * P + o]++)
				why = "a rank receives a block twice";
		}
		memcpy(has, nxt, (size_t)P * P);
	}
	for (size_t i = 0; !why && i < (size_t)P * P; i++)
		if (!has[i])
			why = "a rank misses a block";
	if (!why && s->multi)
		why = "multi=1";
	free(has);
	free(nxt);
	free(sent);
	free(got);
	return why;
}

static int maxload(const struct sched *s)
{
	uint32_t m = 0;
	for (uint32_t st = 0; st < s->nsteps; st++)
		m = s->fig[st].maxload > m ? s->fig[st].maxload : m;
	return (int)m;
}

/* Jobs on nh hosts of the fabric (hosts per leaf hpl): kind 0 contiguous,
 * 1 holes (every third host left out), 2 cyclic (rank r on the leaves in
 * turn), 3 two ranks per host, rank order interleaved across hosts.
 * Returns P (<= cap). */
static uint32_t job(uint32_t *rh, int kind, uint32_t P, uint32_t nh, uint32_t hpl)
{
	uint32_t nleaf = nh / hpl;
	for (uint32_t r = 0; r < P; r++) {
		switch (kind) {
		case 0:
			rh[r] = r % nh;
			break;
		case 1:
			rh[r] = (r + r / 2) % nh;
			break;
		case 2:
			rh[r] = ((r % nleaf) * hpl + (r / nleaf) % hpl) % nh;
			break;
		default:
			rh[r] = r % ((P + 1) / 2); /* r and r + (P+1)/2 share a host */
			break;
		}
	}
	return P;
}

static int distinct_hosts(const uint32_t *rh, uint32_t P)
{
	for (uint32_t i = 0; i < P; i++)
		for (uint32_t j = i + 1; j < P; j++)
			if (rh[i] == rh[j])
				return 0;
	return 1;
}

int main(void)
{
	static const char *const kinds[] = { "contiguous", "holes", "cyclic", "2 per host" };
	static const uint32_t Ps[] = { 1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 16, 17, 23, 24, 31, 36 };
	struct snap *s2 = snap_new(), *s3 = snap_new();
	tf_tree2(s2, 6, 6, 3, 1); /* 36 hosts, 6 per leaf, 2:1 */
	tf_finish(s2, 0);
	tf_fattree3(s3, 6); /* 54 hosts, 3 per leaf, d-mod-k */
	tf_fattree3_finish(s3, 6);
	struct route_tab *rt2, *rt3;
	if (route_build(s2, NULL, &rt2) || route_build(s3, NULL, &rt3))
		tf_die("route_build");
	const struct route_tab *rts[2] = { rt2, rt3 };
	const uint32_t nh[2] = { 36, 54 }, hpl[2] = { 6, 3 };
	uint32_t rh[64];
	char err[AN_ERR_LEN];
	int runs = 0, bad = 0, ring_load = 0, ring_runs = 0, rank_ring_contends = 0;
	for (int f = 0; f < 2; f++)
		for (int kind = 0; kind < 4; kind++)
			for (size_t i = 0; i < sizeof(Ps) / sizeof(*Ps); i++) {
				uint32_t P = job(rh, kind, Ps[i], nh[f], hpl[f]);
				static const struct {
					enum sched_algo a;
					unsigned k;
				} v[] = { { SCHED_RING, 0 }, { SCHED_AGRING, 0 }, { SCHED_KSHIFT, 0 }, { SCHED_KSHIFT, 1 },
					  { SCHED_KSHIFT, 2 },  { SCHED_KSHIFT, 3 },  { SCHED_KSHIFT, 4 },  { SCHED_KSHIFT, 5 },
					  { SCHED_KSHIFT, 64 } };
				for (size_t x = 0; x < sizeof(v) / sizeof(*v); x++) {
					struct sched_req req = { .algo = v[x].a, .nranks = P, .rank_host = rh, .k = v[x].k };
					struct sched *s = NULL;
					runs++;
					if (sched_build(rts[f], NULL, &req, 1, &s, err)) {
						printf("# %s k=%u P=%u %s: %s\n", sched_algo_name(v[x].a), v[x].k, P, kinds[kind], err);
						bad++;
						continue;
					}
					const char *why = ag_ok(s);
					if (why || sched_check(s, err)) {
						if (bad++ < 10)
							printf("# %s k=%u P=%u %s: %s\n", sched_algo_name(v[x].a), v[x].k, P,
							       kinds[kind], why ? why : err);
					}
					if (v[x].a == SCHED_KSHIFT && s->k != (v[x].k ? (v[x].k < P ? v[x].k : P) : (P < 8 ? P : 8)))
						bad++;
					if (v[x].a == SCHED_AGRING) {
						ring_runs++;
						if (maxload(s) > 1 && ring_load++ < 5)
							printf("# agring P=%u %s on fabric %d: max load %d\n", P, kinds[kind], f,
							       maxload(s));
					}
					if (v[x].a == SCHED_RING && kind == 2 && P >= 12 && distinct_hosts(rh, P))
						rank_ring_contends += maxload(s) > 1;
					sched_free(s);
				}
			}
	tf_check(!bad, "%d allgathers (ring, agring, kshift k=1..5,8,64; P = 1..36 incl. primes; contiguous, holes, "
		       "cyclic, 2 ranks per host; 2:1 tree and d-mod-k 3-level tree) are correct, P-1 steps, multi=0 "
		       "(%d wrong)",
		 runs, bad);
	tf_check(!ring_load, "the ring in the fabric's order: at most 1 flow per cable per step in all %d jobs (%d over)",
		 ring_runs, ring_load);
	tf_check(rank_ring_contends > 0, "the ring in rank order on cyclic jobs piles flows on a cable (%d jobs)",
		 rank_ring_contends);

	/* kShift on every host of the d-mod-k tree, in the fabric's order:
	 * each step is a cyclic shift of all hosts, contention-free under
	 * d-mod-k (Zahavi 2010's shift permutations); k = 3 divides 54. */
	{
		uint32_t all[54];
		for (uint32_t r = 0; r < 54; r++)
			all[r] = 53 - r; /* rank order reversed: the fabric's order puts it right */
		for (unsigned k = 1; k <= 3; k++) {
			struct sched_req req = { .algo = SCHED_KSHIFT, .nranks = 54, .rank_host = all, .k = k };
			struct sched *s = NULL;
			int rc = sched_build(rt3, NULL, &req, 1, &s, err);
			tf_check(!rc && maxload(s) == 1, "kShift k=%u on all 54 hosts of a d-mod-k fat tree: max load 1 per step "
							   "(%d)", k, rc ? -1 : maxload(s));
			sched_free(s);
		}
		/* with holes it may contend in some steps, never in most */
		uint32_t holed[36];
		for (uint32_t r = 0; r < 36; r++)
			holed[r] = r + r / 3 >= 54 ? 53 : r + r / 3;
		struct sched_req req = { .algo = SCHED_KSHIFT, .nranks = 36, .rank_host = holed, .k = 4 };
		struct sched *s = NULL;
		if (!sched_build(rt3, NULL, &req, 1, &s, err)) {
			uint32_t free_steps = 0;
			for (uint32_t st = 0; st < s->nsteps; st++)
				free_steps += s->fig[st].maxload <= 1;
			tf_check(free_steps * 2 > s->nsteps, "kShift k=4 with holes: %u of %u steps contention-free", free_steps,
				 s->nsteps);
			sched_free(s);
		}
	}

	/* agbest: never answers what is predicted slower than the ring;
	 * kPrefix listed not applicable where k does not divide P. */
	{
		int wrong = 0, na = 0, cases = 0;
		for (int kind = 0; kind < 4; kind++)
			for (uint32_t P = 2; P <= 24; P += 1 + P / 6) {
				job(rh, kind, P, 36, 6);
				for (int fb = 0; fb <= 1; fb++) {
					/* k = 8: kShift's default, kPrefix's only where 8 divides P
					 * (its own default, the largest power of two <= 8 dividing P,
					 * always applies: k = 1 is the ring in rank order) */
					struct sched_req req = { .algo = SCHED_AGBEST, .nranks = P, .rank_host = rh, .k = 8 };
					struct sched *s = NULL;
					struct advice a;
					if (advice_schedule(rt2, NULL, &req, 1 << 20, fb, 1, &s, &a, err)) {
						wrong++;
						continue;
					}
					cases++;
					if (fb && (a.time > a.ring_time * (1 + 1e-9) || a.nvar != 3))
						wrong++;
					if (a.slower != (s->algo == SCHED_RING) || (a.slower && !fb))
						wrong++;
					for (uint32_t i = 0; i < a.nvar; i++) {
						if (a.var[i].state == ADVICE_NOTAPPLIC)
							na += a.var[i].algo == SCHED_ALLGATHER;
						if (a.var[i].state == ADVICE_OFFERED && a.var[i].time > a.ring_time * (1 + 1e-9))
							wrong++;
						if (a.var[i].algo == s->algo && a.var[i].time != a.time)
							wrong++;
						/* the answer is the fastest offered */
						if (fb && a.var[i].state == ADVICE_OFFERED && a.var[i].time < a.time * (1 - 1e-9))
							wrong++;
					}
					if (a.bound < 0 || a.bound > a.time * (1 + 1e-9))
						wrong++;
					sched_free(s);
				}
			}
		tf_check(!wrong && na > 0,
			 "agbest in %d cases: the fastest offered variant, never predicted slower than the ring (else the "
			 "ring, slower=1), no faster than the host-cable bound; kPrefix not applicable in %d (%d wrong)",
			 cases, na, wrong);
		/* a single variant predicted slower is answered by the ring */
		job(rh, 2, 24, 36, 6);
		struct sched_req req = { .algo = SCHED_RING, .nranks = 24, .rank_host = rh };
		struct sched *s = NULL;
		struct advice a;
		int rc = advice_schedule(rt2, NULL, &req, 1 << 20, 1, 1, &s, &a, err);
		tf_check(!rc && s->algo == SCHED_RING && a.time == a.ring_time && !a.slower, "ring asked: the ring, its own baseline");
		sched_free(s);
		req.algo = SCHED_ALLGATHER;
		req.k = 8;
		rc = advice_schedule(rt2, NULL, &req, 1 << 20, 1, 1, &s, &a, err);
		/* kPrefix's ring is kPrefix with k = 1: what libtii 1.4 reads */
		int ringed = s && s->algo == SCHED_ALLGATHER && s->k == 1;
		tf_check(!rc && a.nvar == 1 && (a.var[0].state == ADVICE_SLOWER) == ringed &&
				 (a.var[0].state == ADVICE_SLOWER) == a.slower,
			 "kPrefix on a cyclic job: answered by the ring (as kPrefix, k=1) iff predicted slower (%s, %.1f vs %.1f us)",
			 rc ? err : sched_algo_name(s->algo), rc ? 0 : a.var[0].time * 1e6, rc ? 0 : a.ring_time * 1e6);
		/* and its flows are the ring's, step by step */
		struct sched *rg = NULL;
		struct sched_req rr = req;
		rr.algo = SCHED_RING;
		int same = ringed && sched_build(rt2, NULL, &rr, 1, &rg, err) == 0 && rg->nsteps == s->nsteps &&
			   !memcmp(rg->step_off, s->step_off, (rg->nsteps + 1) * sizeof(*rg->step_off));
		size_t nf = same ? rg->step_off[rg->nsteps] : 0;
		same = same && !memcmp(rg->src, s->src, nf * sizeof(*rg->src)) && !memcmp(rg->dst, s->dst, nf * sizeof(*rg->dst)) &&
		       !memcmp(rg->blk, s->blk, nf * sizeof(*rg->blk));
		tf_check(!ringed || same, "and kPrefix with k=1 is the ring in rank order, flow for flow (%zu flows)", nf);
		sched_free(rg);
		sched_free(s);
		req.k = 16;
		rc = advice_schedule(rt2, NULL, &req, 1 << 20, 1, 1, &s, &a, err);
		tf_check(rc == AN_E_NOTAPPLIC, "kPrefix k=16 on 24 ranks asked alone: not applicable (%s)", err);
	}
	route_free(rt2);
	route_free(rt3);
	snap_free(s2);
	snap_free(s3);
	return tf_failures ? 1 : 0;
}
