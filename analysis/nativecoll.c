/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nativecoll.c - the MPIs' own collectives as programs (nativecoll.h):
 * Bcast, Gather, Scatter and Allgather, and what every collective shares
 * (nativecoll_impl.h); Reduce and Allreduce are in nativecoll_reduce.c.
 *
 * Every algorithm below follows its SMPI source rank by rank: the same
 * trees, the same order of sends and receives, blocking where the source
 * blocks, posted together where it posts them together, the same byte
 * counts (a receive posted larger than its message takes the message's).
 * Ranks are communicator ranks i < c->k; a message to oneself is a copy
 * and is left out, as SMPI's Sendrecv to oneself is.
 */
#include "nativecoll_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- communicators over a subset, per host ---------------------------------------- */

int nc_sub_make(struct subc *s, const struct nc_comm *c, const uint32_t *sub, uint32_t n)
{
	s->m = malloc(((size_t)n + 1) * sizeof(uint32_t));
	s->host = malloc(((size_t)n + 1) * sizeof(uint32_t));
	if (!s->m || !s->host) {
		free(s->m);
		free(s->host);
		return AN_E_NOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		s->m[i] = c->m[sub[i]];
		s->host[i] = c->host[sub[i]];
	}
	s->c = (struct nc_comm){ n, s->m, s->host };
	return AN_OK;
}

void nc_sub_free(struct subc *s)
{
	free(s->m);
	free(s->host);
}

void nc_smp_free(struct smp *s)
{
	free(s->hof);
	free(s->first);
	free(s->order);
	free(s->leaders);
}

int nc_smp_make(struct smp *s, const struct nc_comm *c)
{
	uint32_t k = c->k;
	memset(s, 0, sizeof(*s));
	s->hof = malloc(((size_t)k + 1) * sizeof(uint32_t));
	s->first = calloc((size_t)k + 2, sizeof(uint32_t));
	s->order = malloc(((size_t)k + 1) * sizeof(uint32_t));
	s->leaders = malloc(((size_t)k + 1) * sizeof(uint32_t));
	if (!s->hof || !s->first || !s->order || !s->leaders) {
		nc_smp_free(s);
		return AN_E_NOMEM;
	}
	/* quadratic in hosts at worst: hosts are few next to ranks x steps */
	for (uint32_t i = 0; i < k; i++) {
		uint32_t h = 0;
		while (h < s->nh && c->host[s->leaders[h]] != c->host[i])
			h++;
		if (h == s->nh)
			s->leaders[s->nh++] = i;
		s->hof[i] = h;
		s->first[h + 1]++;
	}
	s->uniform = 1;
	for (uint32_t h = 0; h < s->nh; h++)
		s->uniform &= s->first[h + 1] == s->first[1];
	for (uint32_t h = 0; h < s->nh; h++)
		s->first[h + 1] += s->first[h];
	uint32_t *at = calloc((size_t)s->nh + 1, sizeof(uint32_t));
	if (!at) {
		nc_smp_free(s);
		return AN_E_NOMEM;
	}
	for (uint32_t i = 0; i < k; i++)
		s->order[s->first[s->hof[i]] + at[s->hof[i]]++] = i;
	free(at);
	return AN_OK;
}

/* ---- Bcast ------------------------------------------------------------------------- */

/* bcast__binomial_tree */
static void bcast_binomial(struct ncx *x, const struct nc_comm *c, uint32_t root, double b)
{
	uint32_t k = c->k;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t rel = (i + k - root) % k, mask = 1;
		while (mask < k) {
			if (rel & mask) {
				R(x, c, i, (i + k - mask) % k, b);
				break;
			}
			mask <<= 1;
		}
		for (mask >>= 1; mask > 0; mask >>= 1)
			if (rel + mask < k)
				S(x, c, i, (i + mask) % k, b);
	}
}

/* bcast__mvapich2_knomial_intra_node, factor 4 */
static void bcast_knomial(struct ncx *x, const struct nc_comm *c, uint32_t root, double b)
{
	const uint32_t f = 4;
	uint32_t k = c->k, req[4];
	for (uint32_t i = 0; i < k && k > 1; i++) {
		uint32_t rel = (i + k - root) % k, mask = 1;
		while (mask < k) {
			if (rel % (f * mask)) {
				R(x, c, i, (rel / (f * mask) * (f * mask) + root) % k, b);
				break;
			}
			mask *= f;
		}
		for (mask /= f; mask > 0; mask /= f) {
			uint32_t n = 0;
			for (uint32_t j = 1; j < f; j++)
				if (rel + mask * j < k)
					req[n++] = IS(x, c, i, (i + mask * j) % k, b);
			for (uint32_t j = 0; j < n; j++)
				W(x, c, i, req[j]);
		}
	}
}

/* bcast__NTSL (binary 0: a chain 0 -> 1 -> ...) and bcast__NTSB (binary
 * 1: a tree rooted at 0, children 2i+1, 2i+2) share their code but for
 * the tree: 8 KiB segments, each rank posting every segment's receive,
 * then for each segment waiting for it and posting its sends to its
 * children; the root first hands the message to rank 0, and a remainder
 * goes to the selected Bcast. */
static int bcast_nts(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts, int binary)
{
	uint32_t k = c->k;
	uint64_t seg = 8192 / ts ? 8192 / ts : 1, pipe = count / seg, rem = count % seg;
	double b = (double)count * ts, sb = (double)seg * ts;
	if (root != 0) {
		S(x, c, root, 0, b);
		R(x, c, 0, root, b);
	}
	uint32_t *q = malloc(((size_t)pipe + 1) * 3 * sizeof(uint32_t));
	if (!q)
		return AN_E_NOMEM;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t from = !i ? 0 : binary ? (i - 1) / 2 : i - 1, kid[2], nk = 0;
		for (uint64_t j = binary ? 2 * (uint64_t)i + 1 : (uint64_t)i + 1; j < k && nk < 1u + binary; j++)
			kid[nk++] = (uint32_t)j;
		if (count <= seg) {
			if (i)
				R(x, c, i, from, b);
			for (uint32_t j = 0; j < nk; j++)
				S(x, c, i, kid[j], b);
			continue;
		}
		uint64_t ns = 0;
		if (i) {
			for (uint64_t s = 0; s < pipe; s++)
				q[2 * pipe + s] = IR(x, c, i, from, sb);
		}
		for (uint64_t s = 0; s < pipe && nk; s++) {
			if (i)
				W(x, c, i, q[2 * pipe + s]);
			for (uint32_t j = 0; j < nk; j++)
				q[ns++] = IS(x, c, i, kid[j], sb);
		}
		if (!nk)
			for (uint64_t s = 0; s < pipe && i; s++)
				W(x, c, i, q[2 * pipe + s]);
		for (uint64_t s = 0; s < ns; s++)
			W(x, c, i, q[s]);
	}
	free(q);
	if (rem && count > seg)
		return nc_bcast_sel(x, c, root, rem, ts, 0);
	return AN_OK;
}

/* bcast__ompi_pipeline: one chain from the root in segments of 128, 64
 * or 16 KiB by Open MPI's rule; a rank posts the next segment's receive,
 * waits for the one before, sends it on. */
static int bcast_pipeline(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts)
{
	uint32_t k = c->k;
	/* Open MPI's MPI_Bcast returns before any algorithm for a count of 0
	 * (MPI allows it), and segcount would give 0 segments' size. */
	if (k == 1 || !count)
		return AN_OK;
	double msg = (double)ts * (double)count;
	uint64_t segsize = 1024 << 7;
	if (k < 1.6134e-6 * msg + 2.1102)
		segsize = 1024 << 7;
	else if (k < 2.3679e-6 * msg + 1.1787)
		segsize = 1024 << 6;
	else if (k < 3.2118e-6 * msg + 8.7936)
		segsize = 1024 << 4;
	uint64_t cbs = segcount(segsize, ts, count), nseg = (count + cbs - 1) / cbs;
	double sb = (double)cbs * ts, last = (double)(count - (nseg - 1) * cbs) * ts;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t sr = (i + k - root) % k, prev = (i + k - 1) % k, next = (i + 1) % k;
		int has_next = sr + 1 < k;
		if (sr == 0) {
			for (uint64_t s = 0; s < nseg; s++)
				W(x, c, i, IS(x, c, i, next, s == nseg - 1 ? last : sb));
		} else {
			/* the chain's last rank receives as the inner ones do and sends nothing on */
			uint32_t rq[2];
			int ri = 0;
			rq[0] = IR(x, c, i, prev, sb);
			for (uint64_t s = 1; s < nseg; s++) {
				ri ^= 1;
				rq[ri] = IR(x, c, i, prev, sb);
				W(x, c, i, rq[ri ^ 1]);
				if (has_next)
					W(x, c, i, IS(x, c, i, next, sb));
			}
			W(x, c, i, rq[ri]);
			if (has_next)
				W(x, c, i, IS(x, c, i, next, last));
		}
	}
	return AN_OK;
}

/* The binomial scatter of scatter_for_bcast and bcast__scatter_LR_allgather:
 * cur[rel] each rank's bytes after it (ceiling pieces of ss bytes). */
static void bcast_scatter(struct ncx *x, const struct nc_comm *c, uint32_t root, int64_t nbytes, int64_t ss,
			  int64_t *cur)
{
	uint32_t k = c->k;
	for (uint32_t rel = 0; rel < k; rel++)
		cur[rel] = rel ? 0 : nbytes;
	/* a parent's rel is below its children's: each rank's bytes are known
	 * when it is reached */
	for (uint32_t rel = 0; rel < k; rel++) {
		uint32_t i = (rel + root) % k, mask = 1;
		while (mask < k) {
			if (rel & mask) {
				int64_t rs = nbytes - (int64_t)rel * ss;
				if (rs > 0)
					R(x, c, i, (i + k - mask) % k, (double)rs);
				else
					cur[rel] = 0;
				break;
			}
			mask <<= 1;
		}
		for (mask >>= 1; mask > 0; mask >>= 1)
			if (rel + mask < k) {
				int64_t send = cur[rel] - ss * (int64_t)mask;
				if (send > 0) {
					S(x, c, i, (i + mask) % k, (double)send);
					cur[rel + mask] = send;
					cur[rel] -= send;
				}
			}
	}
}

/* The bytes of piece rel that the scatter deals out: ss, less for the
 * last ones (ceiling pieces). */
static int64_t scatter_piece(int64_t nbytes, int64_t ss, uint32_t rel)
{
	int64_t v = nbytes - (int64_t)rel * ss;
	return v > ss ? ss : v < 0 ? 0 : v;
}

/* MPICH's recursive doubling of pieces (allgather__rdb, and the allgather
 * of bcast__scatter_rdb_allgather), ranks taken relative to root: rank
 * rel holds cur[rel] bytes and exchanges what it holds with rel ^ mask;
 * where a size not a power of two leaves a subtree without its partner,
 * the subtree's ranks that have the data pass it on by recursive halving.
 * Amounts move as the code's statuses say (a receive takes what was
 * sent): each step in lock-step over the ranks. */
static int rdb_gather(struct ncx *x, const struct nc_comm *c, uint32_t root, int64_t *cur)
{
	uint32_t k = c->k;
	int64_t *old = malloc(3 * ((size_t)k + 1) * sizeof(int64_t));
	if (!old)
		return AN_E_NOMEM;
	int64_t *rs = old + k + 1, *ors = old + 2 * ((size_t)k + 1);
	memset(rs, 0, (size_t)k * sizeof(int64_t));
	for (uint32_t mask = 1, i = 0; mask < k; mask <<= 1, i++) {
		memcpy(old, cur, (size_t)k * sizeof(int64_t));
		for (uint32_t rel = 0; rel < k; rel++) {
			uint32_t rd = rel ^ mask;
			if (rd < k) {
				SR(x, c, (rel + root) % k, (rd + root) % k, (double)old[rel], (rd + root) % k,
				   (double)old[rd]);
				rs[rel] = old[rd];
				cur[rel] += old[rd];
			}
		}
		uint32_t kk = 0;
		for (uint32_t j = mask; j; j >>= 1)
			kk++;
		kk--;
		for (uint32_t tm = mask >> 1; tm; tm >>= 1, kk--) {
			memcpy(ors, rs, (size_t)k * sizeof(int64_t));
			for (uint32_t rel = 0; rel < k; rel++) {
				/* the code's ints: done may be negative */
				int64_t rd = rel ^ mask, dtr = rd >> i << i, mtr = rel >> i << i;
				if (!(dtr + mask > (int64_t)k))
					continue;
				int64_t done = (int64_t)k - mtr - mask, dst = rel ^ tm, tr = rel >> kk << kk;
				if (dst >= k)
					continue;
				if (dst > rel && rel < tr + done && dst >= tr + done) {
					S(x, c, (rel + root) % k, ((uint32_t)dst + root) % k, (double)ors[rel]);
				} else if (dst < rel && dst < tr + done && rel >= tr + done) {
					R(x, c, (rel + root) % k, ((uint32_t)dst + root) % k, (double)ors[dst]);
					rs[rel] = ors[dst];
					cur[rel] += ors[dst];
				}
			}
		}
	}
	free(old);
	return AN_OK;
}

/* bcast__scatter_rdb_allgather: the binomial scatter, then recursive
 * doubling of the pieces. */
static int bcast_scatter_rdb(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts)
{
	uint32_t k = c->k;
	int64_t nbytes = (int64_t)count * ts;
	if (k == 1 || !nbytes)
		return AN_OK;
	int64_t ss = (nbytes + k - 1) / k;
	int64_t *cur = malloc(((size_t)k + 1) * sizeof(int64_t));
	if (!cur)
		return AN_E_NOMEM;
	bcast_scatter(x, c, root, nbytes, ss, cur);
	for (uint32_t rel = 0; rel < k; rel++)
		cur[rel] = scatter_piece(nbytes, ss, rel);
	int rc = rdb_gather(x, c, root, cur);
	free(cur);
	return rc;
}

/* bcast__scatter_LR_allgather: the binomial scatter, then a ring. */
static int bcast_scatter_lr(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts)
{
	uint32_t k = c->k;
	int64_t nbytes = (int64_t)count * ts, ss = (nbytes + k - 1) / k;
	int64_t *cur = malloc(2 * ((size_t)k + 1) * sizeof(int64_t)), *rc = cur + k + 1;
	if (!cur)
		return AN_E_NOMEM;
	bcast_scatter(x, c, root, nbytes, ss, cur);
	for (uint32_t i = 0; i < k; i++)
		rc[i] = scatter_piece(nbytes, ss, i);
	for (uint32_t i = 0; i < k; i++) {
		uint32_t left = (i + k - 1) % k, right = (i + 1) % k, src = i, next = left;
		for (uint32_t s = 1; s < k; s++) {
			SR(x, c, i, right, (double)rc[(src + k - root) % k], left, (double)rc[(next + k - root) % k]);
			src = next;
			next = (next + k - 1) % k;
		}
	}
	free(cur);
	return AN_OK;
}

/* bcast__SMP_binomial: ranks taken host-major by rank / num_core (as the
 * code does, whatever the placement), binomial among each block's first
 * rank, then within each block. */
static void bcast_smp_binomial(struct ncx *x, const struct nc_comm *c, uint32_t root, double b, uint32_t nc)
{
	uint32_t k = c->k;
	if (root != 0) {
		S(x, c, root, 0, b);
		R(x, c, 0, root, b);
	}
	for (uint32_t i = 0; i < k; i++) {
		uint32_t ir = i / nc, is = (k - 1) / nc + 1, ra = i % nc, isz = nc, mask;
		if (i / nc * nc == k / nc * nc)
			isz = k - i / nc * nc;
		if (ra == 0) {
			for (mask = 1; mask < is; mask <<= 1)
				if (ir & mask) {
					R(x, c, i, (ir - mask) * nc, b);
					break;
				}
			for (mask >>= 1; mask > 0; mask >>= 1)
				if (ir < is && (ir + mask) * nc < k)
					S(x, c, i, (ir + mask) * nc, b);
		}
		uint32_t base = i / nc * nc;
		for (mask = 1; mask < isz; mask <<= 1)
			if (ra & mask) {
				R(x, c, i, base + ra - mask, b);
				break;
			}
		for (mask >>= 1; mask > 0; mask >>= 1)
			if (ra < isz && base + ra + mask < k)
				S(x, c, i, base + ra + mask, b);
	}
}

/* bcast__mpich; smpcomm: a communicator SMPI's init_smp made (intra-node,
 * leaders), which takes the size rules directly. */
static int bcast_mpich(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts,
		       int smpcomm)
{
	double b = (double)count * ts;
	if (!smpcomm && x->md == NATIVE_SMPI_MPICH) {
		struct smp s;
		if (nc_smp_make(&s, c))
			return AN_E_NOMEM;
		int uni = s.uniform;
		uint32_t nc = s.first[1];
		nc_smp_free(&s);
		if (uni) {
			bcast_smp_binomial(x, c, root, b, nc);
			return AN_OK;
		}
	}
	if (b < 12288 || c->k <= 8) {
		bcast_binomial(x, c, root, b);
		return AN_OK;
	}
	if (b < 524288 && !(c->k % 2))
		return bcast_scatter_rdb(x, c, root, count, ts);
	return bcast_scatter_lr(x, c, root, count, ts);
}

/* Open MPI 4.1's fixed Bcast decision (bcast__ompi): 1 linear (SMPI:
 * NTSL), 2 chain, 3 pipeline (both ompi_pipeline), 4 split binary tree,
 * 5 binary tree (NTSB), 6 binomial, 7 k-nomial, 8 scatter + recursive
 * doubling, 9 scatter + ring. */
static const struct nc_band ompi_bcast_rules[] = {
	{ 4, { { 32, 3 }, { 256, 5 }, { 512, 3 }, { 1024, 7 }, { 32768, 1 }, { 131072, 5 }, { 262144, 2 },
		{ 524288, 1 }, { 1048576, 6 }, { NC_ANY, 5 } } },
	{ 8, { { 64, 5 }, { 128, 6 }, { 2048, 5 }, { 8192, 6 }, { 1048576, 1 }, { NC_ANY, 2 } } },
	{ 16, { { 8, 7 }, { 64, 5 }, { 4096, 7 }, { 16384, 5 }, { 32768, 6 }, { NC_ANY, 1 } } },
	{ 32, { { 4096, 7 }, { 1048576, 6 }, { NC_ANY, 8 } } },
	{ 64, { { 2048, 6 }, { NC_ANY, 7 } } },
	{ 128, { { NC_ANY, 7 } } },
	{ 256, { { 2, 6 }, { 16384, 5 }, { 32768, 1 }, { 65536, 5 }, { NC_ANY, 7 } } },
	{ 1024, { { 16384, 7 }, { 32768, 4 }, { NC_ANY, 7 } } },
	{ 2048, { { 524288, 7 }, { NC_ANY, 8 } } },
	{ 4096, { { 262144, 7 }, { NC_ANY, 8 } } },
	{ NC_ANY, { { 8192, 7 }, { 16384, 5 }, { 262144, 7 }, { NC_ANY, 8 } } },
};

int nc_bcast_sel(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts, int smpcomm)
{
	if (c->k < 2)
		return AN_OK;
	if (++x->depth > NC_DEPTH)
		return unmodelled(x, "a Bcast within Bcasts", c->k);
	int rc = AN_OK;
	if (smpi_mpich(x)) {
		rc = bcast_mpich(x, c, root, count, ts, smpcomm);
	} else {
		double b = (double)count * ts;
		switch (nc_rule_alg(ompi_bcast_rules, c->k, count * ts)) {
		case 1: rc = bcast_nts(x, c, root, count, ts, 0); break;
		case 2:
		case 3: rc = bcast_pipeline(x, c, root, count, ts); break;
		case 5: rc = bcast_nts(x, c, root, count, ts, 1); break;
		case 6: bcast_binomial(x, c, root, b); break;
		case 7: bcast_knomial(x, c, root, b); break;
		case 8: rc = bcast_scatter_rdb(x, c, root, count, ts); break;
		case 9: rc = bcast_scatter_lr(x, c, root, count, ts); break;
		default: rc = unmodelled(x, "Open MPI's split binary tree Bcast", c->k); break;
		}
	}
	x->depth--;
	return rc;
}

int nc_bcast(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	     uint32_t tsize, char err[AN_ERR_LEN])
{
	struct ncx x = { md, p, err, 0 };
	if (root >= c->k || !tsize)
		return unmodelled(&x, "a Bcast from no root", c->k);
	return nc_bcast_sel(&x, c, root, count, tsize, 0);
}

/* ---- Gather and Scatter ------------------------------------------------------------- */

/* How many blocks vkid's subtree holds under vrank (gather/scatter
 * binomial's mycount). */
static uint32_t bm_blocks(uint32_t vrank, uint32_t vkid, uint32_t k)
{
	uint32_t n = vkid - vrank;
	return n > k - vkid ? k - vkid : n;
}

/* gather__ompi_binomial: each even vrank receives its children's
 * subtrees one after the other (smallest first), then sends all it holds
 * to its parent. */
static void gather_binomial(struct ncx *x, const struct nc_comm *c, uint32_t root, double blk)
{
	uint32_t k = c->k, kids[32], parent;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t v = (i + k - root) % k, n = bm_children(v, k, kids, &parent), total = 1;
		if (!(v % 2))
			for (uint32_t j = 0; j < n; j++) {
				uint32_t cnt = bm_blocks(v, kids[j], k);
				R(x, c, i, (kids[j] + root) % k, cnt * blk);
				total += cnt;
			}
		if (i != root)
			S(x, c, i, (parent + root) % k, total * blk);
	}
}

static void gather_linear(struct ncx *x, const struct nc_comm *c, uint32_t root, double blk)
{
	for (uint32_t i = 0; i < c->k; i++)
		if (i == root)
			for (uint32_t j = 0; j < c->k; j++)
				R(x, c, i, j, blk);
		else
			S(x, c, i, root, blk);
}

/* gather__ompi_linear_sync: the root asks each rank in turn (a 0-byte
 * message) for its first segment, posts the rest, waits for the first. */
static int gather_linear_sync(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts)
{
	uint32_t k = c->k;
	uint64_t first = segcount((double)count * ts > 92160 ? 32768 : 1024, ts, count);
	double f = (double)first * ts, rest = (double)(count - first) * ts;
	uint32_t *rq = malloc(((size_t)k + 1) * sizeof(uint32_t));
	if (!rq)
		return AN_E_NOMEM;
	for (uint32_t i = 0; i < k; i++) {
		if (i != root) {
			R(x, c, i, root, 0);
			S(x, c, i, root, f);
			S(x, c, i, root, rest);
			continue;
		}
		for (uint32_t j = 0; j < k; j++) {
			rq[j] = NC_NONE;
			if (j == i)
				continue;
			uint32_t a = IR(x, c, i, j, f);
			S(x, c, i, j, 0);
			rq[j] = IR(x, c, i, j, rest);
			W(x, c, i, a);
		}
		for (uint32_t j = 0; j < k; j++)
			W(x, c, i, rq[j]);
	}
	free(rq);
	return AN_OK;
}

/* gather__ompi's table: 1 linear, 2 binomial, 3 linear_sync, by the
 * block's bytes. */
static const struct nc_band ompi_gather_rules[] = {
	{ 4, { { 2, 3 }, { 4, 1 }, { 32768, 2 }, { 65536, 1 }, { 131072, 2 }, { NC_ANY, 3 } } },
	{ 8, { { 1024, 2 }, { 8192, 1 }, { 32768, 2 }, { 262144, 1 }, { NC_ANY, 3 } } },
	{ 256, { { NC_ANY, 2 } } },
	{ 512, { { 2048, 2 }, { 8192, 1 }, { NC_ANY, 2 } } },
	{ NC_ANY, { { NC_ANY, 2 } } },
};

int nc_gather(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	      uint32_t tsize, char err[AN_ERR_LEN])
{
	struct ncx x = { md, p, err, 0 };
	double blk = (double)count * tsize;
	if (root >= c->k)
		return unmodelled(&x, "a Gather from no root", c->k);
	if (c->k < 2)
		return AN_OK;
	if (smpi_mpich(&x)) {
		gather_binomial(&x, c, root, blk);
		return AN_OK;
	}
	switch (nc_rule_alg(ompi_gather_rules, c->k, count * tsize)) {
	case 1:
		gather_linear(&x, c, root, blk);
		return AN_OK;
	case 3:
		return gather_linear_sync(&x, c, root, count, tsize);
	default:
		gather_binomial(&x, c, root, blk);
		return AN_OK;
	}
}

/* scatter__ompi_binomial: the root sends each child its subtree's blocks,
 * smallest subtree first; each even vrank receives its subtree's blocks
 * and passes them on the same way. */
static void scatter_binomial(struct ncx *x, const struct nc_comm *c, uint32_t root, double blk)
{
	uint32_t k = c->k, kids[32], parent;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t v = (i + k - root) % k, n = bm_children(v, k, kids, &parent);
		if (v % 2) {
			R(x, c, i, (parent + root) % k, blk);
			continue;
		}
		if (i != root)
			R(x, c, i, (parent + root) % k, blk * k);
		for (uint32_t j = 0; j < n; j++)
			S(x, c, i, (kids[j] + root) % k, bm_blocks(v, kids[j], k) * blk);
	}
}

/* scatter__ompi_basic_linear (blocking sends in rank order) and
 * scatter__ompi_linear_nb (every send posted, then waited for). */
static int scatter_linear(struct ncx *x, const struct nc_comm *c, uint32_t root, double blk, int nb)
{
	uint32_t *rq = malloc(((size_t)c->k + 1) * sizeof(uint32_t)), n = 0;
	if (!rq)
		return AN_E_NOMEM;
	for (uint32_t i = 0; i < c->k; i++) {
		if (i != root) {
			R(x, c, i, root, blk);
			continue;
		}
		for (uint32_t j = 0; j < c->k; j++)
			if (j != i && nb)
				rq[n++] = IS(x, c, i, j, blk);
			else if (j != i)
				S(x, c, i, j, blk);
		for (uint32_t j = 0; j < n; j++)
			W(x, c, i, rq[j]);
	}
	free(rq);
	return AN_OK;
}

/* scatter__ompi's table: 1 linear, 2 binomial, 3 linear_nb. */
static const struct nc_band ompi_scatter_rules[] = {
	{ 4, { { 2, 3 }, { 131072, 1 }, { 262144, 3 }, { NC_ANY, 1 } } },
	{ 8, { { 2048, 2 }, { 4096, 1 }, { 8192, 2 }, { 32768, 1 }, { 1048576, 3 }, { NC_ANY, 1 } } },
	{ 16, { { 16384, 2 }, { 1048576, 3 }, { NC_ANY, 1 } } },
	{ 32, { { 16384, 2 }, { 32768, 1 }, { NC_ANY, 3 } } },
	{ 64, { { 512, 2 }, { 8192, 3 }, { 16384, 2 }, { NC_ANY, 3 } } },
	{ NC_ANY, { { 512, 2 }, { NC_ANY, 3 } } },
};

int nc_scatter(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	       uint32_t tsize, char err[AN_ERR_LEN])
{
	struct ncx x = { md, p, err, 0 };
	double blk = (double)count * tsize;
	if (root >= c->k)
		return unmodelled(&x, "a Scatter from no root", c->k);
	if (c->k < 2)
		return AN_OK;
	int alg = smpi_mpich(&x) ? 2 : nc_rule_alg(ompi_scatter_rules, c->k, count * tsize);
	if (alg == 2) {
		scatter_binomial(&x, c, root, blk);
		return AN_OK;
	}
	return scatter_linear(&x, c, root, blk, alg == 3);
}

/* ---- Allgather ---------------------------------------------------------------------- */

static int allgather_rdb(struct ncx *x, const struct nc_comm *c, double blk)
{
	int64_t *cur = malloc(((size_t)c->k + 1) * sizeof(int64_t));
	if (!cur)
		return AN_E_NOMEM;
	for (uint32_t i = 0; i < c->k; i++)
		cur[i] = (int64_t)blk;
	int rc = rdb_gather(x, c, 0, cur);
	free(cur);
	return rc;
}

/* allgather__bruck: to rank - 2^j from rank + 2^j, doubling blocks, the
 * remainder last. */
static void allgather_bruck(struct ncx *x, const struct nc_comm *c, double blk)
{
	uint32_t k = c->k;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t pof2 = 1;
		double n = blk;
		for (; pof2 <= k / 2; pof2 *= 2, n *= 2)
			SR(x, c, i, (i + k - pof2) % k, n, (i + pof2) % k, n);
		if (k - pof2)
			SR(x, c, i, (i + k - pof2) % k, (k - pof2) * blk, (i + pof2) % k, (k - pof2) * blk);
	}
}

/* allgather__ring (SMPI's: each rank's own block to rank + s in step s)
 * and allgather__pair (rank XOR s) */
static void allgather_shift(struct ncx *x, const struct nc_comm *c, double blk, int pair)
{
	uint32_t k = c->k;
	for (uint32_t i = 0; i < k; i++)
		for (uint32_t s = 1; s < k; s++)
			SR(x, c, i, pair ? i ^ s : (i + s) % k, blk, pair ? i ^ s : (i + k - s) % k, blk);
}

/* allgather__ompi_neighborexchange (an odd size: the ring) */
static void allgather_neighbor(struct ncx *x, const struct nc_comm *c, double blk)
{
	uint32_t k = c->k;
	if (k % 2) {
		allgather_shift(x, c, blk, 0);
		return;
	}
	for (uint32_t i = 0; i < k; i++) {
		uint32_t nb[2];
		nb[0] = i % 2 ? (i + k - 1) % k : (i + 1) % k;
		nb[1] = i % 2 ? (i + 1) % k : (i + k - 1) % k;
		SR(x, c, i, nb[0], blk, nb[0], blk);
		for (uint32_t s = 1; s < k / 2; s++)
			SR(x, c, i, nb[s % 2], 2 * blk, nb[s % 2], 2 * blk);
	}
}

/* allgather__ompi's table: 2 bruck, 3 rdb, 4 ring, 5 neighbour exchange,
 * 6 pair (two ranks). */
static const struct nc_band ompi_allgather_rules[] = {
	{ 3, { { NC_ANY, 6 } } },   /* two ranks: nc_allgather stops below two */
	{ 32, { { NC_ANY, 3 } } },
	{ 64, { { 1024, 3 }, { 65536, 5 }, { NC_ANY, 4 } } },
	{ 128, { { 512, 3 }, { 65536, 5 }, { NC_ANY, 4 } } },
	{ 256, { { 512, 3 }, { 131072, 5 }, { 524288, 4 }, { 1048576, 5 }, { NC_ANY, 4 } } },
	{ 512, { { 32, 3 }, { 128, 2 }, { 1024, 3 }, { 131072, 5 }, { 524288, 4 }, { 1048576, 5 },
		{ NC_ANY, 4 } } },
	{ 1024, { { 64, 3 }, { 256, 2 }, { 2048, 3 }, { NC_ANY, 5 } } },
	{ 2048, { { 4, 3 }, { 8, 2 }, { 16, 3 }, { 32, 2 }, { 256, 3 }, { 512, 2 }, { 4096, 3 },
		{ NC_ANY, 5 } } },
	{ 4096, { { 32, 2 }, { 128, 3 }, { 512, 2 }, { 4096, 3 }, { NC_ANY, 5 } } },
	{ NC_ANY, { { 2, 3 }, { 8, 2 }, { 16, 3 }, { 512, 2 }, { 4096, 3 }, { NC_ANY, 5 } } },
};

int nc_allgather(enum native_model md, struct mprog *p, const struct nc_comm *c, uint64_t count, uint32_t tsize,
		 char err[AN_ERR_LEN])
{
	struct ncx x = { md, p, err, 0 };
	uint32_t k = c->k;
	uint64_t t = count * tsize;
	double blk = (double)t;
	if (k < 2 || !t)
		return AN_OK;
	int alg;
	if (smpi_mpich(&x))
		alg = !(k & (k - 1)) && t * k < 524288 ? 3 : t * k <= 81920 ? 2 : 4;
	else
		alg = nc_rule_alg(ompi_allgather_rules, k, t);
	switch (alg) {
	case 2: allgather_bruck(&x, c, blk); return AN_OK;
	case 3: return allgather_rdb(&x, c, blk);
	case 5: allgather_neighbor(&x, c, blk); return AN_OK;
	case 6: allgather_shift(&x, c, blk, 1); return AN_OK;
	default: allgather_shift(&x, c, blk, 0); return AN_OK;
	}
}
