/*
 * init.c - topocoll's options, and the one question to topod at MPI_Init.
 *
 * Environment (read by every rank; mpirun -x / srun --export give all ranks
 * the same values, which the ranks' agreement relies on):
 *   TOPOCOLL=off                 nothing hierarchical; every call is the MPI's
 *   TOPOCOLL_DISABLE=bcast,...   these collectives stay the MPI's
 *   TOPOCOLL_MIN_BYTES=N         the smallest message (per rank, bytes) that
 *                                goes hierarchical (default per collective)
 *   TOPOCOLL_ALLREDUCE_FLOAT=1   also reassociate floating-point sums and
 *                                products (their last bits may then differ
 *                                from the MPI's own order)
 *   TOPOCOLL_VERBOSE=1           rank 0 says, once per communicator and
 *                                collective, what runs and why
 *   TOPOCOLL_STATS=1             rank 0 prints its call counts at MPI_Finalize
 *   TOPOCOLL_TIMEOUT_MS=N        how long rank 0 waits for topod (3000)
 *   TII_SERVERS, TII_HOST, TII_HOSTMAP as for every libtii user.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "mpihost.h"
#include "tii.h"

#define TC_NAME (TII_NAME_MAX + 1)

struct tc_global tc_g;
const char *const tc_op_name[TC_NOPS] = { "bcast", "gather", "scatter", "allreduce" };

/* Below these, a flat algorithm's few messages cost less than two levels
 * of them: the leaf step adds a latency the bytes saved must pay for. */
static const size_t tc_min_default[TC_NOPS] = { 65536, 16384, 16384, 65536 };

static long env_long(const char *var, long def, long lo, long hi)
{
	const char *s = getenv(var);
	char *end;
	if (!s || !*s)
		return def;
	long v = strtol(s, &end, 10);
	return (*end || v < lo || v > hi) ? def : v;
}

static void options(void)
{
	const char *all = getenv("TOPOCOLL"), *dis = getenv("TOPOCOLL_DISABLE");
	int on = !(all && (!strcmp(all, "off") || !strcmp(all, "0")));
	for (int op = 0; op < TC_NOPS; op++) {
		tc_g.enabled[op] = on;
		tc_g.min_bytes[op] = (size_t)env_long("TOPOCOLL_MIN_BYTES", (long)tc_min_default[op], 0, 1L << 40);
		if (dis) {
			const char *p = strstr(dis, tc_op_name[op]);
			size_t l = strlen(tc_op_name[op]);
			if (p && (p == dis || p[-1] == ',') && (p[l] == '\0' || p[l] == ','))
				tc_g.enabled[op] = 0;
		}
	}
	tc_g.verbose = env_long("TOPOCOLL_VERBOSE", 0, 0, 9) > 0;
	tc_g.stats = env_long("TOPOCOLL_STATS", 0, 0, 9) > 0;
	tc_g.float_reduce = env_long("TOPOCOLL_ALLREDUCE_FLOAT", 0, 0, 1) > 0;
}

static int delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
	(void)comm;
	(void)keyval;
	(void)extra;
	struct tc_comm *c = attr;
	if (!c)
		return MPI_SUCCESS;
	if (c->leafcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->leafcomm);
	if (c->leadcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->leadcomm);
	if (c->pcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->pcomm);
	free(c->leaf_of);
	free(c->leader);
	free(c->leaf_size);
	free(c);
	return MPI_SUCCESS;
}

/* Rank 0: the leaf cluster ID of each of n ranks' hosts (0 for a rank
 * without a name), one request for the distinct hosts. 0, or -1 and why. */
static int ask_topod(const char *names, int n, uint64_t *ids, char *why, size_t whyn)
{
	const char **uniq = malloc((size_t)n * sizeof(*uniq));
	int *slot = malloc((size_t)n * sizeof(*slot)), nu = 0, rc = -1, depth = 0;
	uint64_t *uid = malloc((size_t)n * sizeof(*uid));
	tii_t *t = NULL;
	if (!uniq || !slot || !uid) {
		snprintf(why, whyn, "out of memory");
		goto out;
	}
	for (int r = 0; r < n; r++) {
		const char *nm = names + (size_t)r * TC_NAME;
		slot[r] = -1;
		for (int u = 0; nm[0] && u < nu && slot[r] < 0; u++)
			if (!strcmp(uniq[u], nm))
				slot[r] = u;
		if (nm[0] && slot[r] < 0) {
			uniq[nu] = nm;
			slot[r] = nu++;
		}
	}
	int e = tii_open(&t, NULL);
	if (!e)
		e = tii_set_timeout(t, (int)env_long("TOPOCOLL_TIMEOUT_MS", 3000, 1, 600000));
	if (!e)
		e = tii_get_network_depth(t, &depth);
	if (!e)
		e = tii_connected_switch_clusters_at_depth(t, uniq, (size_t)nu, depth > 0 ? depth - 1 : 0, uid, NULL);
	if (e) {
		snprintf(why, whyn, "topod: %s (%s)", tii_strerror(e), t ? tii_last_message(t) : "");
		goto out;
	}
	for (int r = 0; r < n; r++)
		ids[r] = slot[r] >= 0 ? uid[slot[r]] : 0;
	rc = 0;
out:
	tii_close(t);
	free(uniq);
	free(slot);
	free(uid);
	return rc;
}

/* Collective over MPI_COMM_WORLD, inside MPI_Init: every rank's leaf. */
static void world_leaves(void)
{
	int rank, size;
	MPI_Comm w;
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &size);
	tc_g.world_rank = rank;
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &w) != MPI_SUCCESS)
		return;
	char name[TC_NAME] = "", why[160] = "";
	if (mpihost_name(rank, name, sizeof(name), why, sizeof(why)))
		name[0] = '\0';
	char *names = rank ? NULL : malloc((size_t)size * TC_NAME);
	uint64_t *ids = rank ? NULL : calloc((size_t)size, sizeof(*ids));
	int fail = !rank && (!names || !ids);
	PMPI_Gather(name, TC_NAME, MPI_CHAR, names, TC_NAME, MPI_CHAR, 0, w);
	if (!rank && !fail)
		fail = ask_topod(names, size, ids, tc_g.why, sizeof(tc_g.why));
	else if (!rank)
		snprintf(tc_g.why, sizeof(tc_g.why), "out of memory");
	PMPI_Bcast(tc_g.why, (int)sizeof(tc_g.why), MPI_CHAR, 0, w);
	PMPI_Scatter(ids, 1, MPI_UINT64_T, &tc_g.leaf_id, 1, MPI_UINT64_T, 0, w);
	if (!name[0])
		snprintf(tc_g.why, sizeof(tc_g.why), "rank %d's host: %.120s", rank, why);
	tc_g.have_leaf = tc_g.leaf_id != 0;
	if (!tc_g.have_leaf && !tc_g.why[0])
		snprintf(tc_g.why, sizeof(tc_g.why), "topod does not know rank %d's host %.100s", rank, name);
	free(names);
	free(ids);
	PMPI_Comm_free(&w);
}

void tc_init(void)
{
	options();
	PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &tc_g.keyval, NULL);
	int any = 0;
	for (int op = 0; op < TC_NOPS; op++)
		any |= tc_g.enabled[op];
	if (any)
		world_leaves();
	else
		snprintf(tc_g.why, sizeof(tc_g.why), "TOPOCOLL=off");
	if (tc_g.verbose && tc_g.world_rank == 0)
		fprintf(stderr, "topocoll: %s\n", tc_g.have_leaf ? "leaf switches known from topod" : tc_g.why);
}

void tc_finalize(void)
{
	if (!tc_g.stats || tc_g.world_rank != 0)
		return;
	/* Only what exists: building the state here would be a collective
	 * that rank 0 runs alone while the others are in MPI_Finalize. */
	struct tc_comm *c = NULL, none = { 0 };
	int flag = 0;
	if (PMPI_Comm_get_attr(MPI_COMM_WORLD, tc_g.keyval, &c, &flag) != MPI_SUCCESS || !flag || !c)
		c = &none;
	fprintf(stderr, "topocoll: rank 0 of MPI_COMM_WORLD:");
	for (int op = 0; op < TC_NOPS; op++)
		fprintf(stderr, " %s %llu hierarchical %llu native%s", tc_op_name[op], c->hier[op], c->native[op],
			op + 1 < TC_NOPS ? "," : "\n");
}

void tc_tell(struct tc_comm *c, enum tc_op op, int hier, const char *why)
{
	if (!tc_g.verbose || c->rank != 0 || (c->told[op] & (1 << hier)))
		return;
	c->told[op] |= 1 << hier;
	fprintf(stderr, "topocoll: %s on a communicator of %d ranks (%d leaves): %s%s%s\n", tc_op_name[op], c->size,
		c->nleaves, hier ? "hierarchical over leaf switches" : "the MPI's own", why && *why ? ": " : "",
		why ? why : "");
}
