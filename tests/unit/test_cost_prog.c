/*
 * test_cost_prog.c - ranks' programs in the cost model (analysis/cost.h
 * prog, mprog.h) and the MPIs' own collectives as programs (nativecoll.h),
 * against hand-computed times and shapes:
 *   - a blocking send after a rendezvous one waits for it; after an eager
 *     one it does not; a wait for a posted receive stops only its rank;
 *   - a program and the same messages as steps take the same time;
 *   - sends matched with receives in order between a pair, an unmatched
 *     one refused and named, a rank's message to itself refused;
 *   - the selectors' trees: a binomial Bcast from a root other than 0 (SMPI's
 *     MPICH selector, one rank a host: root to 0, then the tree), Open MPI's
 *     k-nomial, the in-order binomial Gather's subtree sizes, the Scatter's
 *     smallest subtree first, recursive doubling with the ranks beyond a
 *     power of two folded, Rabenseifner's halves, Bruck's remainder, the
 *     MPICH selector's two-level Allreduce with four ranks a host;
 *   - every algorithm of both selectors at every size and 1..20 ranks
 *     builds into matched programs (no send without its receive).
 */
#include <math.h>
#include <string.h>

#include "cost.h"
#include "mprog.h"
#include "nativecoll.h"
#include "testfab.h"

/* every pair on its own cable (a star without sharing): cable a x 32 + b */
static uint32_t own_route(const void *ctx, uint32_t a, uint32_t b, uint32_t *out)
{
	(void)ctx;
	out[0] = a * 32 + b;
	return 1;
}

static uint64_t bps[32 * 32];

static double timed(const struct mprog *p, int *rc, char err[AN_ERR_LEN])
{
	struct mp_built b;
	double t = -1;
	*rc = mp_build(p, &b, err);
	if (*rc)
		return -1;
	*rc = mp_time(&b, own_route, NULL, 32 * 32, bps, NULL, &t, err);
	mp_built_free(&b);
	return t;
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15;
}

static void hand(void)
{
	struct mprog p;
	char err[AN_ERR_LEN];
	int rc;
	/* 1e9 bytes/s cables, 100 ns latency (one cable) */
	double one = 100e-9, big = 100000, small = 1000;
	/* rank 0 sends to 1 then to 2, blocking: rendezvous one after the other */
	mp_init(&p, 3);
	mp_send(&p, 0, 1, big);
	mp_send(&p, 0, 2, big);
	mp_recv(&p, 1, 0, big);
	mp_recv(&p, 2, 0, big);
	double t = timed(&p, &rc, err);
	tf_check(!rc && near(t, 2 * (one + (big + 16) * 1e-9)), "rendezvous sends one after the other (%g s)", t);
	mp_free(&p);
	mp_init(&p, 3);
	mp_send(&p, 0, 1, small);
	mp_send(&p, 0, 2, small);
	mp_recv(&p, 1, 0, small);
	mp_recv(&p, 2, 0, small);
	t = timed(&p, &rc, err);
	tf_check(!rc && near(t, one + (small + 16) * 1e-9), "eager sends at once (%g s)", t);
	mp_free(&p);
	/* rank 1 posts its receive from 0, then must finish a receive from 2
	 * that 2 sends late (after its own receive from 0): 0 -> 2, 2 -> 1 */
	mp_init(&p, 3);
	uint32_t q = mp_irecv(&p, 1, 0, big);
	mp_recv(&p, 1, 2, big);
	mp_wait(&p, 1, q);
	mp_send(&p, 0, 1, big);
	mp_send(&p, 0, 2, big);
	mp_recv(&p, 2, 0, big);
	mp_send(&p, 2, 1, big);
	t = timed(&p, &rc, err);
	double m = one + (big + 16) * 1e-9;
	tf_check(!rc && near(t, 3 * m), "a receive posted early and waited for late: 0->1, 0->2, 2->1 (%g s)", t);
	mp_free(&p);
	/* unmatched and self messages */
	mp_init(&p, 2);
	mp_send(&p, 0, 1, small);
	t = timed(&p, &rc, err);
	tf_check(rc == AN_E_INVAL && strstr(err, "send 0 -> 1 number 0 has no receive"), "an unmatched send refused: %s",
		 err);
	mp_free(&p);
	mp_init(&p, 2);
	mp_send(&p, 0, 0, small);
	t = timed(&p, &rc, err);
	tf_check(rc == AN_E_INVAL, "a message to oneself refused: %s", err);
	mp_free(&p);
	/* two messages between one pair match in order: 10 then 1000 bytes */
	mp_init(&p, 2);
	mp_send(&p, 0, 1, 10);
	mp_send(&p, 0, 1, 1000);
	mp_recv(&p, 1, 0, 2000);
	mp_recv(&p, 1, 0, 2000);
	struct mp_built b;
	rc = mp_build(&p, &b, err);
	tf_check(!rc && b.F == 2 && b.bytes[0] == 10 && b.bytes[1] == 1000,
		 "messages between a pair matched in order, each its sender's size");
	if (!rc)
		mp_built_free(&b);
	mp_free(&p);
}

/* The flows of a built program from s to d (their number, bytes in all). */
static int flows(const struct mp_built *b, uint32_t s, uint32_t d, double *bytes)
{
	int n = 0;
	*bytes = 0;
	for (uint32_t f = 0; f < b->F; f++)
		if (b->src[f] == s && b->dst[f] == d) {
			n++;
			*bytes += b->bytes[f];
		}
	return n;
}

struct comm {
	uint32_t m[64], host[64];
	struct nc_comm c;
};

static void comm(struct comm *x, uint32_t k, uint32_t per_host)
{
	for (uint32_t i = 0; i < k; i++) {
		x->m[i] = i;
		x->host[i] = i / per_host;
	}
	x->c = (struct nc_comm){ k, x->m, x->host };
}

static int build(struct mprog *p, struct mp_built *b)
{
	char err[AN_ERR_LEN];
	return mp_build(p, b, err);
}

static void shapes(void)
{
	struct comm x;
	struct mprog p;
	struct mp_built b;
	char err[AN_ERR_LEN];
	double by;
	/* SMPI's MPICH Bcast, 8 ranks one a host, root 3: 3 -> 0 whole, then
	 * the binomial from 0: 0 -> 4, 2, 1; 4 -> 6, 5; 2 -> 3; 6 -> 7 */
	comm(&x, 8, 1);
	mp_init(&p, 8);
	int rc = nc_bcast(NATIVE_SMPI_MPICH, &p, &x.c, 3, 1000, 1, err);
	rc = rc ? rc : build(&p, &b);
	tf_check(!rc && b.F == 8 && flows(&b, 3, 0, &by) == 1 && flows(&b, 0, 4, &by) == 1 && flows(&b, 4, 6, &by) == 1 &&
		 flows(&b, 6, 7, &by) == 1 && flows(&b, 2, 3, &by) == 1,
		 "SMPI MPICH Bcast from 3 on 8 hosts: to 0, then the binomial from 0 (%u flows)", rc ? 0 : b.F);
	if (!rc)
		mp_built_free(&b);
	mp_free(&p);
	/* Open MPI's k-nomial (64..127 ranks): 100 ranks, 4-nomial: 0 -> 64,
	 * 16, 32, 48, 4, 8, 12, 1, 2, 3 */
	comm(&x, 64, 1);
	mp_init(&p, 64);
	rc = nc_bcast(NATIVE_SMPI_OMPI, &p, &x.c, 0, 4096, 1, err);
	rc = rc ? rc : build(&p, &b);
	int out0 = 0;
	for (uint32_t f = 0; !rc && f < b.F; f++)
		out0 += b.src[f] == 0;
	tf_check(!rc && b.F == 63 && out0 == 9 && flows(&b, 0, 16, &by) == 1 && flows(&b, 16, 20, &by) == 1,
		 "Open MPI's Bcast on 64 ranks at 4 KiB: the 4-nomial, 9 children of the root (%d)", out0);
	if (!rc)
		mp_built_free(&b);
	mp_free(&p);
	/* in-order binomial Gather, 8 ranks, root 0: 4 sends 4 blocks, 2 two */
	comm(&x, 8, 1);
	mp_init(&p, 8);
	rc = nc_gather(NATIVE_SMPI_MPICH, &p, &x.c, 0, 100, 1, err);
	rc = rc ? rc : build(&p, &b);
	double b4 = 0, b2 = 0, b1 = 0;
	tf_check(!rc && flows(&b, 4, 0, &b4) == 1 && flows(&b, 2, 0, &b2) == 1 && flows(&b, 1, 0, &b1) == 1 &&
		 b4 == 400 && b2 == 200 && b1 == 100, "binomial Gather: subtrees of 4, 2, 1 blocks into the root");
	if (!rc)
		mp_built_free(&b);
	mp_free(&p);
	/* Rabenseifner on 6 ranks (SMPI's Open MPI selector at 8 KiB on 4..7
	 * ranks): 0 and 2 fold into 1 and 3; the halves go between the other
	 * four; 12000 ints: 3000 a quarter */
	comm(&x, 6, 1);
	mp_init(&p, 6);
	rc = nc_allreduce(NATIVE_SMPI_OMPI, &p, &x.c, 12000, 4, 1, err);
	rc = rc ? rc : build(&p, &b);
	double f01 = 0, h13 = 0;
	tf_check(!rc && flows(&b, 0, 1, &f01) == 1 && f01 == 48000 && flows(&b, 1, 3, &h13) == 2 && h13 == 24000 + 24000,
		 "Rabenseifner on 6 ranks: a fold of the whole vector, then a half each way between 1 and 3");
	if (!rc)
		mp_built_free(&b);
	mp_free(&p);
	/* SMPI's MPICH Allreduce, 8 ranks four a host: 1..3 and 5..7 reduce at
	 * 0 and 4 (recursive doubling within the host), 0 <-> 4, Bcast back */
	comm(&x, 8, 4);
	mp_init(&p, 8);
	rc = nc_allreduce(NATIVE_SMPI_MPICH, &p, &x.c, 250, 4, 1, err);
	rc = rc ? rc : build(&p, &b);
	int cross = 0;
	for (uint32_t f = 0; !rc && f < b.F; f++)
		cross += x.host[b.src[f]] != x.host[b.dst[f]];
	tf_check(!rc && cross == 2 && flows(&b, 0, 4, &by) == 1 && flows(&b, 4, 0, &by) == 1,
		 "MPICH's two-level Allreduce: only the leaders cross hosts (%d flows across)", cross);
	if (!rc)
		mp_built_free(&b);
	mp_free(&p);
	/* Bruck's Allgather on 6 ranks: steps of 1, 2, then the remaining 2 */
	comm(&x, 6, 1);
	mp_init(&p, 6);
	rc = nc_allgather(NATIVE_SMPI_MPICH, &p, &x.c, 10, 1, err);
	rc = rc ? rc : build(&p, &b);
	double s1 = 0, s2 = 0;
	tf_check(!rc && flows(&b, 1, 0, &s1) == 1 && s1 == 10 && flows(&b, 2, 0, &s2) == 1 && s2 == 20 &&
		 flows(&b, 4, 0, &by) == 1 && by == 20, "Bruck on 6 ranks: 1, 2, then 2 blocks");
	if (!rc)
		mp_built_free(&b);
	mp_free(&p);
}

/* Every algorithm of both selectors, 1..20 ranks, two ranks a host or one,
 * sizes from 1 byte to 4 MiB: the programs build (every message matched). */
static void all_match(void)
{
	static const uint64_t sizes[] = { 0, 1, 7, 100, 1024, 4000, 8192, 12000, 65536, 262144, 1048576, 4194304 };
	int bad = 0, built = 0, unmodelled = 0;
	char err[AN_ERR_LEN] = "", first[AN_ERR_LEN + 64] = "";
	for (int md = NATIVE_SMPI_OMPI; md <= NATIVE_SMPI_MPICH; md++)
		for (uint32_t k = 1; k <= 20; k++)
			for (uint32_t ph = 1; ph <= 2; ph++)
				for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
					for (int op = 0; op < 5; op++) {
						struct comm x;
						struct mprog p;
						struct mp_built b;
						comm(&x, k, ph);
						mp_init(&p, k);
						uint32_t root = k / 2;
						int rc = op == 0 ? nc_bcast(md, &p, &x.c, root, sizes[s], 1, err)
							 : op == 1 ? nc_gather(md, &p, &x.c, root, sizes[s], 1, err)
							 : op == 2 ? nc_scatter(md, &p, &x.c, root, sizes[s], 1, err)
							 : op == 3 ? nc_allreduce(md, &p, &x.c, (sizes[s] + 3) / 4, 4, s % 2, err)
								   : nc_allgather(md, &p, &x.c, sizes[s], 1, err);
						if (rc == AN_E_NOTAPPLIC) {
							unmodelled++;
						} else if (rc || mp_build(&p, &b, err)) {
							if (!bad++)
								snprintf(first, sizeof(first), "md %d op %d k %u/%u size %llu: %s", md,
									 op, k, ph, (unsigned long long)sizes[s], err);
						} else {
							built++;
							mp_built_free(&b);
						}
						mp_free(&p);
					}
	tf_check(!bad, "both selectors, every collective, 1..20 ranks, 0 B..4 MiB: %d programs matched, %d "
		       "not modelled, %d broken%s%s", built, unmodelled, bad, bad ? ": " : "", first);
}

int main(void)
{
	for (int i = 0; i < 32 * 32; i++)
		bps[i] = 8000000000ull;
	hand();
	shapes();
	all_match();
	return tf_failures != 0;
}
