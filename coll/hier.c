/*
 * hier.c - the hierarchical algorithms over leaf switches (Subramoni et
 * al. 2013, chapters 3 and 4): leaders are each leaf's lowest rank.
 *
 *   Bcast      root -> its leaf's leader; leaders among themselves; each
 *              leader within its leaf.
 *   Gather     each leaf gathers at its leader; leaders send their leaf's
 *              blocks to the root, which places every block.
 *   Scatter    the mirror image.
 *   Allreduce  reduce within each leaf at its leader, allreduce among the
 *              leaders, broadcast within each leaf.
 *
 * The point is where the bytes go: one message per leaf crosses the
 * fabric above the leaves instead of one per rank (Gather, Scatter), and a
 * broadcast tree whose upper edges are one per leaf (Bcast).
 *
 * Data moves in the user's own datatypes where every rank has one
 * (Bcast, Allreduce); Gather and Scatter carry other ranks' data through
 * the leaders, whose own types say nothing about it, so each rank's block
 * travels packed (MPI_Pack: in a homogeneous job exactly its type
 * signature's bytes, the same on every rank) and is unpacked at its
 * destination with the destination's type. Every byte ends where the MPI's
 * own algorithm puts it: results are byte-equal.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define TC_TAG 7717 /* on the private communicator: no user message can match */

int tc_bcast(struct tc_comm *c, void *buf, int count, MPI_Datatype dt, int root)
{
	int rl = c->leaf_of[root], lead = c->leader[rl], rc = MPI_SUCCESS;
	if (root != lead) {
		if (c->rank == root)
			rc = PMPI_Send(buf, count, dt, lead, TC_TAG, c->pcomm);
		else if (c->rank == lead)
			rc = PMPI_Recv(buf, count, dt, root, TC_TAG, c->pcomm, MPI_STATUS_IGNORE);
	}
	if (rc == MPI_SUCCESS && c->leadcomm != MPI_COMM_NULL)
		rc = PMPI_Bcast(buf, count, dt, rl, c->leadcomm);
	if (rc == MPI_SUCCESS)
		rc = PMPI_Bcast(buf, count, dt, 0, c->leafcomm);
	return rc;
}

/* A rank's block: its type signature's bytes, the same on every rank by
 * MPI's matching rule (MPI_Pack_size is only an upper bound); wrap.c keeps
 * size x this within an int. MPI_Pack must then write exactly this much. */
static int block_bytes(int count, MPI_Datatype dt)
{
	int sz = 0;
	PMPI_Type_size(dt, &sz);
	return count * sz;
}

/* Every rank says whether it can go on (buffers allocated, its blocks
 * packed to the expected size): all go on, or all hand the call to the
 * MPI, so that no rank waits for one that gave up. */
static int all_ok(const struct tc_comm *c, int ok)
{
	int all = 0;
	PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->pcomm);
	return all;
}

/* Leaf L's members' packed blocks, in rank order, at the leader: the
 * leader's part of the root's buffer. The root places them. */
static int root_gathers(struct tc_comm *c, char *all, int S, void *rbuf, int rcount, MPI_Datatype rt,
			int in_place)
{
	MPI_Aint lb, ext;
	PMPI_Type_get_extent(rt, &lb, &ext);
	size_t off = 0;
	int rc = MPI_SUCCESS;
	/* blocks come leaf by leaf (leaf order), members in rank order */
	for (int L = 0; L < c->nleaves && rc == MPI_SUCCESS; L++)
		for (int r = 0; r < c->size && rc == MPI_SUCCESS; r++) {
			if (c->leaf_of[r] != L)
				continue;
			if (!(in_place && r == c->rank)) {
				int pos = 0;
				rc = PMPI_Unpack(all + off, S, &pos, (char *)rbuf + (MPI_Aint)r * rcount * ext, rcount, rt,
						 c->pcomm);
			}
			off += (size_t)S;
		}
	return rc;
}

/* Where leaf L's blocks start in the root's buffer (leaf order). */
static size_t leaf_off(const struct tc_comm *c, int L, int S)
{
	size_t n = 0;
	for (int l = 0; l < L; l++)
		n += (size_t)c->leaf_size[l];
	return n * (size_t)S;
}

int tc_gather(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
	      MPI_Datatype rt, int root)
{
	int in_place = c->rank == root && sbuf == MPI_IN_PLACE, S, rc;
	MPI_Aint lb, ext;
	if (in_place) {
		PMPI_Type_get_extent(rt, &lb, &ext);
		sbuf = (char *)rbuf + (MPI_Aint)c->rank * rcount * ext;
		scount = rcount;
		st = rt;
	}
	S = block_bytes(scount, st);
	int me_lead = c->leader[c->myleaf] == c->rank, nl = c->leaf_size[c->myleaf];
	size_t all_n = c->rank == root ? (size_t)c->size * S : me_lead ? (size_t)nl * S : 0;
	char *mine = calloc(S ? (size_t)S : 1, 1), *all = malloc(all_n ? all_n : 1);
	int pos = 0;
	rc = mine && all ? PMPI_Pack(sbuf, scount, st, mine, S, &pos, c->pcomm) : MPI_ERR_NO_MEM;
	if (!all_ok(c, rc == MPI_SUCCESS && pos == S)) {
		free(mine);
		free(all);
		return PMPI_Gather(in_place ? MPI_IN_PLACE : sbuf, scount, st, rbuf, rcount, rt, root, c->pcomm);
	}
	/* the root collects its own leaf's blocks in place, others apart */
	char *leafbuf = c->rank == root ? all + leaf_off(c, c->myleaf, S) : all;
	if (rc == MPI_SUCCESS)
		rc = PMPI_Gather(mine, S, MPI_PACKED, leafbuf, S, MPI_PACKED, 0, c->leafcomm);
	if (rc == MPI_SUCCESS && c->rank == root) {
		MPI_Request *rq = malloc((size_t)c->nleaves * sizeof(*rq));
		MPI_Status *sts = malloc((size_t)c->nleaves * sizeof(*sts));
		int nr = 0;
		for (int L = 0; rq && sts && L < c->nleaves && rc == MPI_SUCCESS; L++)
			if (L != c->myleaf || !me_lead)
				rc = PMPI_Irecv(all + leaf_off(c, L, S), c->leaf_size[L] * S, MPI_PACKED, c->leader[L],
						TC_TAG, c->pcomm, &rq[nr++]);
		if (!rq || !sts)
			rc = MPI_ERR_NO_MEM;
		if (rc == MPI_SUCCESS)
			rc = PMPI_Waitall(nr, rq, sts);
		free(rq);
		free(sts);
		if (rc == MPI_SUCCESS)
			rc = root_gathers(c, all, S, rbuf, rcount, rt, in_place);
	} else if (rc == MPI_SUCCESS && me_lead) {
		rc = PMPI_Send(all, nl * S, MPI_PACKED, root, TC_TAG, c->pcomm);
	}
	free(mine);
	free(all);
	return rc;
}

/* The root packs every rank's block, leaf by leaf, members in rank order. */
static int root_packs(struct tc_comm *c, char *all, int S, const void *sbuf, int scount, MPI_Datatype st)
{
	MPI_Aint lb, ext;
	PMPI_Type_get_extent(st, &lb, &ext);
	size_t off = 0;
	int rc = MPI_SUCCESS;
	for (int L = 0; L < c->nleaves && rc == MPI_SUCCESS; L++)
		for (int r = 0; r < c->size && rc == MPI_SUCCESS; r++) {
			if (c->leaf_of[r] != L)
				continue;
			int pos = 0;
			rc = PMPI_Pack((const char *)sbuf + (MPI_Aint)r * scount * ext, scount, st, all + off, S, &pos,
				       c->pcomm);
			if (rc == MPI_SUCCESS && pos != S)
				rc = MPI_ERR_TRUNCATE;
			off += (size_t)S;
		}
	return rc;
}

int tc_scatter(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
	       MPI_Datatype rt, int root)
{
	int is_root = c->rank == root, in_place = is_root && rbuf == MPI_IN_PLACE, S, rc = MPI_SUCCESS;
	S = is_root ? block_bytes(scount, st) : block_bytes(rcount, rt);
	int me_lead = c->leader[c->myleaf] == c->rank, nl = c->leaf_size[c->myleaf];
	size_t all_n = is_root ? (size_t)c->size * S : me_lead ? (size_t)nl * S : 0;
	char *mine = malloc(S ? (size_t)S : 1), *all = malloc(all_n ? all_n : 1);
	MPI_Request *rq = is_root ? malloc((size_t)c->nleaves * sizeof(*rq)) : NULL;
	MPI_Status *sts = is_root ? malloc((size_t)c->nleaves * sizeof(*sts)) : NULL;
	if (!mine || !all || (is_root && (!rq || !sts)))
		rc = MPI_ERR_NO_MEM;
	else if (is_root)
		rc = root_packs(c, all, S, sbuf, scount, st);
	if (!all_ok(c, rc == MPI_SUCCESS)) {
		free(mine);
		free(all);
		free(rq);
		free(sts);
		return PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, c->pcomm);
	}
	if (is_root) {
		int nr = 0;
		for (int L = 0; rq && sts && L < c->nleaves && rc == MPI_SUCCESS; L++)
			if (L != c->myleaf || !me_lead)
				rc = PMPI_Isend(all + leaf_off(c, L, S), c->leaf_size[L] * S, MPI_PACKED, c->leader[L],
						TC_TAG, c->pcomm, &rq[nr++]);
		/* the root's own leaf: if the root leads it, scatter from here */
		char *leafbuf = all + leaf_off(c, c->myleaf, S);
		if (rc == MPI_SUCCESS && me_lead)
			rc = PMPI_Scatter(leafbuf, S, MPI_PACKED, mine, S, MPI_PACKED, 0, c->leafcomm);
		else if (rc == MPI_SUCCESS)
			rc = PMPI_Scatter(NULL, S, MPI_PACKED, mine, S, MPI_PACKED, 0, c->leafcomm);
		if (rc == MPI_SUCCESS)
			rc = PMPI_Waitall(nr, rq, sts);
	} else {
		if (me_lead)
			rc = PMPI_Recv(all, nl * S, MPI_PACKED, root, TC_TAG, c->pcomm, MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS)
			rc = PMPI_Scatter(all, S, MPI_PACKED, mine, S, MPI_PACKED, 0, c->leafcomm);
	}
	if (rc == MPI_SUCCESS && !in_place) {
		int pos = 0;
		rc = PMPI_Unpack(mine, S, &pos, rbuf, rcount, rt, c->pcomm);
	}
	free(mine);
	free(all);
	free(rq);
	free(sts);
	return rc;
}

int tc_allreduce(struct tc_comm *c, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op)
{
	int lead = c->leader[c->myleaf] == c->rank, rc;
	/* In place, a rank's contribution is in rbuf: a leader reduces into
	 * it, a member sends it. */
	const void *in = sbuf == MPI_IN_PLACE ? (lead ? MPI_IN_PLACE : rbuf) : sbuf;
	rc = PMPI_Reduce(in, lead ? rbuf : NULL, count, dt, op, 0, c->leafcomm);
	if (rc == MPI_SUCCESS && lead)
		rc = PMPI_Allreduce(MPI_IN_PLACE, rbuf, count, dt, op, c->leadcomm);
	if (rc == MPI_SUCCESS)
		rc = PMPI_Bcast(rbuf, count, dt, 0, c->leafcomm);
	return rc;
}

/* The leaders' communicator ordered from leaf rl's leader (Subramoni 2013, ch. 4:
 * made on demand, the first time a root on that leaf broadcasts; kept). */
static MPI_Comm ordered_comm(struct tc_comm *c, int rl, int bfs)
{
	int n = c->nleaves, slot = bfs * n + rl, key = 0;
	/* no allocation here: the tables were made with the communicator
	 * (make_scratch), so every rank reaches the split */
	if (c->ordered_made[slot])
		return c->ordered[slot];
	int *order = c->lscratch;
	tc_leader_order(c, rl, bfs, order);
	for (int i = 0; i < n; i++)
		if (order[i] == c->myleaf)
			key = i;
	int lead = c->leader[c->myleaf] == c->rank;
	MPI_Comm nc = MPI_COMM_NULL;
	PMPI_Comm_split(c->pcomm, lead ? 0 : MPI_UNDEFINED, key, &nc);
	/* non-leaders keep MPI_COMM_NULL (no stand-in handle: MPI_COMM_SELF
	 * need not compare equal at MPI_Finalize, SMPI's does not) */
	c->ordered[slot] = nc;
	c->ordered_made[slot] = 1;
	return nc;
}

int tc_bcast_ordered(struct tc_comm *c, void *buf, int count, MPI_Datatype dt, int root, int bfs)
{
	int rl = c->leaf_of[root], lead = c->leader[rl], rc = MPI_SUCCESS;
	MPI_Comm oc = ordered_comm(c, rl, bfs);
	if (oc == MPI_COMM_NULL && c->leader[c->myleaf] == c->rank)
		return MPI_ERR_NO_MEM;
	if (root != lead) {
		if (c->rank == root)
			rc = PMPI_Send(buf, count, dt, lead, TC_TAG, c->pcomm);
		else if (c->rank == lead)
			rc = PMPI_Recv(buf, count, dt, root, TC_TAG, c->pcomm, MPI_STATUS_IGNORE);
	}
	if (rc == MPI_SUCCESS && c->leader[c->myleaf] == c->rank)
		rc = PMPI_Bcast(buf, count, dt, 0, oc);
	if (rc == MPI_SUCCESS)
		rc = PMPI_Bcast(buf, count, dt, 0, c->leafcomm);
	return rc;
}

/* Whether a type's bytes lie in the buffer in the order MPI_Pack gives
 * them: a named type, or contiguous/dup of one. Extents alone cannot tell:
 * MPI_Type_indexed(2, {1,1}, {1,0}, MPI_INT) has no holes and its extent
 * is its size, but its first element lies second. */
int tc_type_in_order(MPI_Datatype dt)
{
	int ni, na, nd, comb;
	if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
		return 0;
	if (comb == MPI_COMBINER_NAMED)
		return 1;
	if ((comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) || nd != 1 || ni > 1 || na > 0)
		return 0;
	int count;
	MPI_Datatype inner;
	if (PMPI_Type_get_contents(dt, ni, 0, 1, &count, NULL, &inner) != MPI_SUCCESS)
		return 0;
	int in_order = tc_type_in_order(inner);
	if (PMPI_Type_get_envelope(inner, &ni, &na, &nd, &comb) == MPI_SUCCESS && comb != MPI_COMBINER_NAMED)
		PMPI_Type_free(&inner);
	return in_order;
}

/* A type whose data is one contiguous run of its size from the buffer, in
 * order: no holes, and for several elements an extent equal to the data's
 * (a resized type's elements lie apart however dense each is). */
static int contiguous(int count, MPI_Datatype dt, int bytes)
{
	MPI_Aint lb, ext, tlb, text;
	if (!tc_type_in_order(dt) || PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS || tlb != 0 ||
	    PMPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS)
		return 0;
	return count <= 1 ? text == bytes : lb == 0 && ext == text && (long long)ext * count == bytes;
}

/* Every rank in one chain, the root first, then its leaf's other ranks,
 * then each leaf's ranks (in rank order) with the leaves in DFS order over
 * the delays from the root's leaf (Subramoni 2013, ch. 4): consecutive
 * ranks share a leaf wherever they can, so each leaf's uplinks carry the
 * message once in and once out, and every host's cable once each way.
 * Rank i takes each segment from rank i-1 and passes it on; with short
 * segments the message costs about its bytes once over the slowest hop
 * plus a segment per rank (van de Geijn's bound for large broadcasts is
 * twice the bytes; a binomial tree's, log2(P) times). */
void tc_chain_order(struct tc_comm *c, int root, int *order, int *chain)
{
	int k = 0, rl = c->leaf_of[root];
	tc_leader_order(c, rl, 0, order);
	chain[k++] = root;
	for (int i = 0; i < c->nleaves; i++)
		for (int r = 0; r < c->size; r++)
			if (c->leaf_of[r] == order[i] && r != root)
				chain[k++] = r;
}

static int pipe_run(struct tc_comm *c, char *bytes, int S, long long seg, const int *chain)
{
	int n = c->size, me = 0, rc = MPI_SUCCESS, nseg = (int)((S + seg - 1) / seg);
	if (nseg < 1)
		nseg = 1;
	while (chain[me] != c->rank)
		me++;
	int prev = me > 0 ? chain[me - 1] : -1, next = me + 1 < n ? chain[me + 1] : -1;
	/* every segment's receive posted first: a segment moves on as soon as
	 * its predecessor hands it over, whatever this rank still sends */
	MPI_Request *rq = malloc(2 * (size_t)nseg * sizeof(*rq));
	MPI_Status *sts = malloc((size_t)nseg * sizeof(*sts));
	if (!rq || !sts) {
		free(rq);
		free(sts);
		return MPI_ERR_NO_MEM;
	}
	MPI_Request *rr = rq + nseg;
	int nr = 0;
	for (int s = 0; s < nseg && rc == MPI_SUCCESS; s++) {
		long long off = (long long)s * seg;
		rr[s] = MPI_REQUEST_NULL;
		if (prev >= 0)
			rc = PMPI_Irecv(bytes + off, (int)(off + seg <= S ? seg : S - off), MPI_BYTE, prev, TC_TAG,
					c->pcomm, &rr[s]);
	}
	for (int s = 0; s < nseg && rc == MPI_SUCCESS; s++) {
		long long off = (long long)s * seg;
		int len = (int)(off + seg <= S ? seg : S - off);
		if (prev >= 0)
			rc = PMPI_Wait(&rr[s], &sts[s]);
		/* one segment in flight per rank: segments posted together share
		 * the cable and arrive together, which is no pipeline at all */
		if (rc == MPI_SUCCESS && next >= 0 && nr > 0)
			rc = PMPI_Wait(&rq[nr - 1], MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS && next >= 0)
			rc = PMPI_Isend(bytes + off, len, MPI_BYTE, next, TC_TAG, c->pcomm, &rq[nr++]);
	}
	if (rc == MPI_SUCCESS)
		rc = PMPI_Waitall(nr, rq, sts);
	free(rq);
	free(sts);
	return rc;
}

int tc_bcast_pipe(struct tc_comm *c, void *buf, int count, MPI_Datatype dt, int root, long long seg)
{
	/* Every rank's signature bytes are alike (wrap.c keeps them within an
	 * int); the type may differ from rank to rank, so each packs its own. */
	int S = block_bytes(count, dt), rc = MPI_SUCCESS;
	int direct = contiguous(count, dt, S);
	char *tmp = direct ? buf : malloc(S ? (size_t)S : 1);
	int *order = malloc((size_t)c->nleaves * sizeof(int)), *chain = malloc((size_t)c->size * sizeof(int));
	int pos = 0;
	if (!tmp || !order || !chain)
		rc = MPI_ERR_NO_MEM;
	else if (!direct && c->rank == root)
		rc = PMPI_Pack(buf, count, dt, tmp, S, &pos, c->pcomm);
	if (!all_ok(c, rc == MPI_SUCCESS && (direct || c->rank != root || pos == S))) {
		if (!direct)
			free(tmp);
		free(order);
		free(chain);
		return PMPI_Bcast(buf, count, dt, root, c->pcomm);
	}
	tc_chain_order(c, root, order, chain);
	rc = pipe_run(c, tmp, S, seg, chain);
	pos = 0;
	if (rc == MPI_SUCCESS && !direct && c->rank != root)
		rc = PMPI_Unpack(tmp, S, &pos, buf, count, dt, c->pcomm);
	if (!direct)
		free(tmp);
	free(order);
	free(chain);
	return rc;
}

/* topod's schedule, step by step: this rank's sends and receives of a step
 * posted at once (a TACS2 step may give it two of each). */
int tc_alltoall(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
		MPI_Datatype rt)
{
	const struct tc_sched *s = c->sched;
	MPI_Aint lb, sext, rext;
	PMPI_Type_get_extent(st, &lb, &sext);
	PMPI_Type_get_extent(rt, &lb, &rext);
	int rc = PMPI_Sendrecv((const char *)sbuf + (MPI_Aint)c->rank * scount * sext, scount, st, c->rank, TC_TAG,
			       (char *)rbuf + (MPI_Aint)c->rank * rcount * rext, rcount, rt, c->rank, TC_TAG, c->pcomm,
			       MPI_STATUS_IGNORE);
	MPI_Request rq[2 * TC_SCHED_MULTI];
	MPI_Status sts[2 * TC_SCHED_MULTI];
	for (int i = 0; i < s->nsteps && rc == MPI_SUCCESS; i++) {
		int nr = 0;
		for (int f = s->roff[i]; f < s->roff[i + 1] && rc == MPI_SUCCESS; f++)
			rc = PMPI_Irecv((char *)rbuf + (MPI_Aint)s->from[f] * rcount * rext, rcount, rt, s->from[f], TC_TAG,
					c->pcomm, &rq[nr++]);
		for (int f = s->soff[i]; f < s->soff[i + 1] && rc == MPI_SUCCESS; f++)
			rc = PMPI_Isend((const char *)sbuf + (MPI_Aint)s->to[f] * scount * sext, scount, st, s->to[f],
					TC_TAG, c->pcomm, &rq[nr++]);
		if (rc == MPI_SUCCESS)
			rc = PMPI_Waitall(nr, rq, sts);
	}
	return rc;
}
