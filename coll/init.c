/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init.c - topocoll's options, and the one question to topod at MPI_Init.
 *
 * Environment (read by every rank; mpirun -x / srun --export give all ranks
 * the same values, which the ranks' agreement relies on):
 *   TOPOCOLL=off                 nothing hierarchical; every call is the MPI's
 *   TOPOCOLL_DISABLE=bcast,...   these collectives stay the MPI's (also
 *                                allgather: Allgather and Allgatherv)
 *   TOPOCOLL_MIN_BYTES=N         no prediction: hierarchical from N bytes
 *                                per rank up (the old size rule, for tests)
 *   TOPOCOLL_CHOICE=model|tree|hier|hosts|pipe|scag|rankorder|ring|leaves|sched|native
 *                                by prediction (default), always that family
 *                                where the collective has it (its parameters
 *                                by prediction), never: for tests
 *   TOPOCOLL_MARGIN=X            a predicted speed-up a plan needs instead of
 *                                the rule (both predictions' errors, 0.98x)
 *   TOPOCOLL_TEST_CYCLE=1        every call the next candidate plan (tests)
 *   TOPOCOLL_MODEL=ompi|mpich|smpi-mpich|smpi-ompi  whose algorithms the
 *                                prediction models (default: the MPI this
 *                                library is built for; smpi-*: SMPI's selectors)
 *   TOPOCOLL_TOPOLOGY=FILE       leaves and delays from a SimGrid platform
 *                                (topoquery simgrid), topod not asked
 *   TOPOCOLL_SCHEDULE=FILE       MPI_Alltoall's schedule from a file
 *   TOPOCOLL_ALLTOALL_MIN=N      smallest block topod is asked about (1024)
 *   TOPOCOLL_ALLGATHER_SCHEDULE=FILE  MPI_Allgather's schedule from a file
 *   TOPOCOLL_ALLGATHER_MIN=N     smallest block for which topod's
 *                                allgather schedule is asked (65536)
 *   TOPOCOLL_RATE=BYTES_PER_S    the rate assumed where topod knows hops but
 *                                not the cables' rates (4e9)
 *   TOPOCOLL_MATRIX_HOSTS=N      above N distinct hosts, delays per leaf (128)
 *   TOPOCOLL_ALLREDUCE_FLOAT=1   also reassociate floating-point sums and
 *                                products (their last bits may then differ
 *                                from the MPI's own order)
 *   TOPOCOLL_VERBOSE=1           rank 0 says, once per communicator and
 *                                collective, what runs and why; 2 also
 *                                MPI_Init's own time, phase by phase
 *   TOPOCOLL_STATS=1             rank 0 prints its call counts at MPI_Finalize
 *   TOPOCOLL_TIMEOUT_MS=N        how long rank 0 waits for topod (3000)
 *   TII_SERVERS, TII_HOST, TII_HOSTMAP as for every libtii user.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "plan.h"
#include "native.h"
#ifndef TOPOCOLL_SMPI
#include "mpihost.h"
#include "tii.h"

_Static_assert(TC_NAME == TII_NAME_MAX + 1, "TC_NAME is libtii's name room");
#endif

struct tc_global tc_g;
const char *const tc_op_name[TC_NOPS] = { "bcast", "gather", "scatter", "allreduce", "alltoall", "allgather" };

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
		tc_g.min_bytes[op] = (size_t)env_long("TOPOCOLL_MIN_BYTES", 0, 0, 1L << 40);
		/* every occurrence: "gather" is inside "allgather" */
		size_t l = strlen(tc_op_name[op]);
		for (const char *p = dis; p && (p = strstr(p, tc_op_name[op])); p++)
			if ((p == dis || p[-1] == ',') && (p[l] == '\0' || p[l] == ','))
				tc_g.enabled[op] = 0;
	}
	const char *mb = getenv("TOPOCOLL_MIN_BYTES"), *ch = getenv("TOPOCOLL_CHOICE");
	const char *mo = getenv("TOPOCOLL_MODEL"), *mg = getenv("TOPOCOLL_MARGIN"), *sf = getenv("TOPOCOLL_SCHEDULE");
	tc_g.min_set = mb && *mb;
	tc_g.choice_mode = ch && !strcmp(ch, "native") ? 2 : 0;
	for (int v = 1; ch && v < TC_NVARIANTS; v++)
		if (!strcmp(ch, tc_variant_key[v])) {
			tc_g.choice_mode = 1;
			tc_g.force = v;
		}
#if defined(MPICH_VERSION) || defined(MPICH_NAME)
	tc_g.nmodel = NATIVE_MPICH;
#else
	tc_g.nmodel = NATIVE_OMPI;
#endif
	enum native_model md;
	if (mo && *mo && native_model_parse(mo, &md) == AN_OK)
		tc_g.nmodel = (int)md;
	tc_g.margin = mg && *mg ? strtod(mg, NULL) : 0;
	if (!(tc_g.margin >= 1.0 && tc_g.margin <= 100.0))
		tc_g.margin = 0;
	/* the model's largest measured error each way (docs/performance.md,
	 * "The model of the MPIs' own collectives") */
	tc_g.test_alg = (int)env_long("TOPOCOLL_TEST_ALG", -1, -1, 64);
	tc_g.test_cycle = env_long("TOPOCOLL_TEST_CYCLE", 0, 0, 1) > 0;
	tc_g.err_plan = TC_ERR_PLAN;
	tc_g.err_native = TC_ERR_NATIVE;
	snprintf(tc_g.sched_file, sizeof(tc_g.sched_file), "%s", sf ? sf : "");
	tc_g.a2a_min = env_long("TOPOCOLL_ALLTOALL_MIN", 1024, 0, 1L << 40);
	const char *af = getenv("TOPOCOLL_ALLGATHER_SCHEDULE");
	snprintf(tc_g.agsched_file, sizeof(tc_g.agsched_file), "%s", af ? af : "");
	tc_g.ag_min = env_long("TOPOCOLL_ALLGATHER_MIN", 65536, 0, 1L << 40);
	tc_g.timeout_ms = (int)env_long("TOPOCOLL_TIMEOUT_MS", 3000, 1, 600000);
	tc_g.verbose = (int)env_long("TOPOCOLL_VERBOSE", 0, 0, 9);
	tc_g.stats = env_long("TOPOCOLL_STATS", 0, 0, 9) > 0;
	tc_g.float_reduce = env_long("TOPOCOLL_ALLREDUCE_FLOAT", 1, 0, 1) > 0;
}

static int delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
	(void)comm;
	(void)keyval;
	(void)extra;
	tc_comm_free(attr);
	return MPI_SUCCESS;
}

/* Rank 0: TOPOCOLL_TOPOLOGY's platform; every rank's leaf from it. */
static int from_file(const char *path, const char *names, int n, uint64_t *ids, char *why, size_t whyn)
{
	FILE *f = fopen(path, "r");
	long len = -1;
	char *xml = NULL;
	if (f && !fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && len < (1L << 31) && !fseek(f, 0, SEEK_SET))
		xml = malloc((size_t)len + 1);
	if (!xml || fread(xml, 1, (size_t)len, f) != (size_t)len) {
		snprintf(why, whyn, "TOPOCOLL_TOPOLOGY %.100s: cannot read it", path);
		free(xml);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	xml[len] = '\0';
	struct tc_platform p = { 0 };
	int rc = tc_platform_parse(&p, xml, why, whyn);
	free(xml);
	if (!rc)
		rc = tc_topo_build(&tc_g.topo, &p, names, NULL, n, why, whyn);
	for (int r = 0; !rc && r < n; r++)
		ids[r] = tc_g.topo.leaf_of_host[tc_g.topo.host_of[r]];
	if (!rc)
		snprintf(tc_g.topo.source, sizeof(tc_g.topo.source), "TOPOCOLL_TOPOLOGY (%d hosts)", tc_g.topo.nhosts);
	tc_platform_free(&p);
	return rc;
}

#ifndef TOPOCOLL_SMPI
/* Rank 0: the leaf cluster ID of each of n ranks' hosts (0 for a rank
 * without a name), one request for the distinct hosts. 0, or -1 and why. */
static int ask_topod(tii_t *t, const char *names, int n, uint64_t *ids, char *why, size_t whyn)
{
	const char **uniq = malloc((size_t)n * sizeof(*uniq));
	int *slot = malloc((size_t)n * sizeof(*slot)), nu = 0, rc = -1, depth = 0;
	uint64_t *uid = malloc((size_t)n * sizeof(*uid));
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
	int e = tii_get_network_depth(t, &depth);
	if (!e)
		e = tii_connected_switch_clusters_at_depth(t, uniq, (size_t)nu, depth > 0 ? depth - 1 : 0, uid, NULL);
	if (e == TII_E_NOTFOUND) {
		/* on a laptop against make lab: the ranks' own host name */
		snprintf(why, whyn, "topod: %s (%.60s); name each rank's host with TII_HOST or TII_HOSTMAP",
			 tii_strerror(e), tii_last_message(t));
		goto out;
	}
	if (e) {
		snprintf(why, whyn, "topod: %s (%s)", tii_strerror(e), tii_last_message(t));
		goto out;
	}
	for (int r = 0; r < n; r++)
		ids[r] = slot[r] >= 0 ? uid[slot[r]] : 0;
	rc = 0;
out:
	free(uniq);
	free(slot);
	free(uid);
	return rc;
}

/* Without rates: the hop matrix, (h + 1) cables and h switches of 100 ns
 * each (the cost model's latencies), every cable at TOPOCOLL_RATE. */
static int hops_platform(tii_t *t, const char **ask, int na, struct tc_platform *p, char *why, size_t whyn)
{
	size_t nn = (size_t)na * na;
	uint16_t *h = malloc(nn * sizeof(*h));
	double rate = (double)env_long("TOPOCOLL_RATE", 4000000000L, 1000000L, 1000000000000L);
	p->n = na;
	p->names = calloc((size_t)na, TC_NAME);
	p->sorted = malloc((size_t)na * sizeof(int));
	p->leaf = calloc((size_t)na, sizeof(uint64_t));
	p->lat = malloc(nn * sizeof(float));
	p->rate = malloc(nn * sizeof(float));
	p->host_rate = malloc((size_t)na * sizeof(float));
	int e = !h || !p->names || !p->sorted || !p->leaf || !p->lat || !p->rate || !p->host_rate ? TII_E_NOMEM
		: tii_get_hop_matrix(t, ask, (size_t)na, h);
	for (size_t i = 0; !e && i < nn; i++) {
		if (h[i] == UINT16_MAX && i % (size_t)(na + 1)) {
			e = TII_E_NOROUTE;
			break;
		}
		p->lat[i] = (float)((2.0 * h[i] + 1) * 100e-9);
		p->rate[i] = (float)rate;
	}
	for (int i = 0; !e && i < na; i++) {
		snprintf(p->names + (size_t)i * TC_NAME, TC_NAME, "%s", ask[i]);
		p->host_rate[i] = (float)rate;
		p->sorted[i] = i;
	}
	free(h);
	if (e) {
		snprintf(why, whyn, "topod hopsmatrix: %s (%.80s)", tii_strerror(e), tii_last_message(t));
		tc_platform_free(p);
		return -1;
	}
	tc_platform_sort(p);
	return 0;
}

/* Rank 0: the delays between the job's hosts, from topod's SimGrid
 * platform of them (routes and rates); on a big job (more distinct hosts
 * than TOPOCOLL_MATRIX_HOSTS) of one host per leaf, each host standing in
 * for its leaf. Without rates (a fabric read from text dumps) the hop
 * matrix and TOPOCOLL_RATE. */
static int ask_delays(tii_t *t, const char *names, int n, const uint64_t *ids, char *why, size_t whyn)
{
	char *alias = malloc((size_t)n * TC_NAME);
	const char **ask = malloc((size_t)n * sizeof(*ask));
	int na = 0, cap = (int)env_long("TOPOCOLL_MATRIX_HOSTS", 128, 2, TII_SIMGRID_HOSTS_MAX), rc = -1;
	if (!alias || !ask) {
		snprintf(why, whyn, "out of memory");
		goto out;
	}
	/* the distinct hosts, or the first host seen of each leaf */
	for (int pass = 0; pass < 2; pass++) {
		na = 0;
		for (int r = 0; r < n; r++) {
			const char *nm = names + (size_t)r * TC_NAME, *stand = NULL;
			for (int k = 0; k < r && !stand; k++)
				if (pass ? ids[k] == ids[r] : !strcmp(names + (size_t)k * TC_NAME, nm))
					stand = alias + (size_t)k * TC_NAME;
			if (!stand) {
				stand = nm;
				ask[na++] = nm;
			}
			memmove(alias + (size_t)r * TC_NAME, stand, TC_NAME);
		}
		if (na <= cap)
			break;
	}
	if (na > TII_SIMGRID_HOSTS_MAX) {
		snprintf(why, whyn, "%d leaves: more than %d", na, TII_SIMGRID_HOSTS_MAX);
		goto out;
	}
	char *xml = NULL;
	tii_set_max_reply_bytes(t, (size_t)1 << 30);
	int e = na > 1 ? tii_get_simgrid_platform(t, ask, (size_t)na, &xml, NULL) : TII_E_INVAL;
	struct tc_platform p = { 0 };
	if (e == TII_E_NOROUTE) {
		/* a cable of unknown rate: hops, and an assumed rate */
		rc = hops_platform(t, ask, na, &p, why, whyn);
	} else if (e) {
		snprintf(why, whyn, "topod simgrid: %s (%.80s)", tii_strerror(e), tii_last_message(t));
		goto out;
	} else {
		rc = tc_platform_parse(&p, xml, why, whyn);
		free(xml);
	}
	if (!rc)
		rc = tc_topo_build(&tc_g.topo, &p, names, alias, n, why, whyn);
	if (!rc)
		snprintf(tc_g.topo.source, sizeof(tc_g.topo.source), "topod's %s (%d %s)",
			 e ? "hops, TOPOCOLL_RATE" : "routes and rates", na, na < tc_g.topo.nhosts ? "leaves" : "hosts");
	tc_g.topo.rates_known = !e;
	tc_platform_free(&p);
out:
	free(alias);
	free(ask);
	return rc;
}
#endif

/* Rank 0: leaves and delays from TOPOCOLL_TOPOLOGY or topod. */
int tc_learn(const char *names, int n, uint64_t *ids, double *ms)
{
	const char *file = getenv("TOPOCOLL_TOPOLOGY");
	if (file && *file) {
		double t0 = PMPI_Wtime();
		int rc = from_file(file, names, n, ids, tc_g.why, sizeof(tc_g.why));
		ms[1] = (PMPI_Wtime() - t0) * 1e3;
		return rc;
	}
#ifdef TOPOCOLL_SMPI
	(void)ids;
	snprintf(tc_g.why, sizeof(tc_g.why), "no TOPOCOLL_TOPOLOGY (topod is out of reach in a simulation)");
	return -1;
#else
	tii_t *t = NULL;
	double t0 = PMPI_Wtime();
	int e = tii_open(&t, NULL);
	if (!e)
		e = tii_set_timeout(t, tc_g.timeout_ms);
	if (e) {
		snprintf(tc_g.why, sizeof(tc_g.why), "topod: %s", tii_strerror(e));
		tii_close(t);
		return -1;
	}
	int rc = ask_topod(t, names, n, ids, tc_g.why, sizeof(tc_g.why));
	ms[1] = (PMPI_Wtime() - t0) * 1e3;
	t0 = PMPI_Wtime();
	char why[160] = "";
	if (!rc && tc_g.choice_mode != 2 && ask_delays(t, names, n, ids, why, sizeof(why)))
		snprintf(tc_g.topo.source, sizeof(tc_g.topo.source), "no delays: %.80s", why);
	ms[2] = (PMPI_Wtime() - t0) * 1e3;
	tii_close(t);
	return rc;
#endif
}

static void my_name(int rank, char *name, char *why, size_t whyn)
{
#ifdef TOPOCOLL_SMPI
	/* a simulated rank's host is the platform's, not this machine's */
	int len = 0;
	(void)rank;
	(void)why;
	(void)whyn;
	PMPI_Get_processor_name(name, &len);
	name[len < TC_NAME ? len : TC_NAME - 1] = '\0';
#else
	if (mpihost_name(rank, name, TC_NAME, why, whyn))
		name[0] = '\0';
#endif
}

/* Collective over MPI_COMM_WORLD, inside MPI_Init: every rank's leaf, the
 * job's delays, the ranks' host names (for topod's schedules). */
static void world_leaves(void)
{
	int rank, size;
	MPI_Comm w;
	double t0 = PMPI_Wtime();
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &size);
	tc_g.world_rank = rank;
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &w) != MPI_SUCCESS)
		return;
	char name[TC_NAME] = "", why[160] = "";
	my_name(rank, name, why, sizeof(why));
	tc_g.hostnames = malloc((size_t)size * TC_NAME);
	/* every rank gets every world rank's leaf: a communicator of world
	 * ranks then numbers its leaves without an exchange (comm.c) */
	uint64_t *ids = calloc((size_t)size, sizeof(*ids));
	int fail = !tc_g.hostnames || !ids, any;
	PMPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_MAX, w);
	if (any) {
		snprintf(tc_g.why, sizeof(tc_g.why), "out of memory");
		free(tc_g.hostnames);
		tc_g.hostnames = NULL;
		free(ids);
		PMPI_Comm_free(&w);
		return;
	}
	PMPI_Allgather(name, TC_NAME, MPI_CHAR, tc_g.hostnames, TC_NAME, MPI_CHAR, w);
	tc_g.init_ms[0] = (PMPI_Wtime() - t0) * 1e3;
	if (!rank)
		tc_learn(tc_g.hostnames, size, ids, tc_g.init_ms);
	t0 = PMPI_Wtime();
	PMPI_Bcast(tc_g.why, (int)sizeof(tc_g.why), MPI_CHAR, 0, w);
	PMPI_Bcast(ids, size, MPI_UINT64_T, 0, w);
	tc_g.leaf_id = ids[rank];
	tc_g.world_leaf = ids;
	tc_topo_bcast(&tc_g.topo, w);
	tc_g.init_ms[3] = (PMPI_Wtime() - t0) * 1e3;
	if (!name[0])
		snprintf(tc_g.why, sizeof(tc_g.why), "rank %d's host: %.120s", rank, why);
	tc_g.have_leaf = tc_g.leaf_id != 0;
	if (!tc_g.have_leaf && !tc_g.why[0])
		snprintf(tc_g.why, sizeof(tc_g.why), "topod does not know rank %d's host %.100s", rank, name);
	PMPI_Comm_free(&w);
}

void tc_init(void)
{
	options();
	PMPI_Comm_create_keyval(tc_comm_copy, delete_fn, &tc_g.keyval, NULL);
	int any = 0;
	for (int op = 0; op < TC_NOPS; op++)
		any |= tc_g.enabled[op];
	/* MPI_COMM_WORLD's state now, with the leaves: every dup of it (a
	 * library's per plan, per module) then inherits it without a message
	 * (tc_comm_copy) */
	if (any) {
		world_leaves();
		tc_comm_get(MPI_COMM_WORLD);
	} else
		snprintf(tc_g.why, sizeof(tc_g.why), "TOPOCOLL=off");
	if (!tc_g.verbose || tc_g.world_rank != 0)
		return;
	if (!tc_g.have_leaf)
		fprintf(stderr, "topocoll: %s\n", tc_g.why);
	else
		fprintf(stderr, "topocoll: leaf switches known from %s; delays: %s\n",
			getenv("TOPOCOLL_TOPOLOGY") && *getenv("TOPOCOLL_TOPOLOGY") ? "TOPOCOLL_TOPOLOGY" : "topod",
			tc_g.topo.nworld ? tc_g.topo.source : tc_g.topo.source[0] ? tc_g.topo.source : "not asked");
	if (tc_g.verbose >= 2)
		fprintf(stderr, "topocoll: MPI_Init: names %.2f ms, leaves %.2f ms, delays %.2f ms, sharing %.2f ms\n",
			tc_g.init_ms[0], tc_g.init_ms[1], tc_g.init_ms[2], tc_g.init_ms[3]);
}

void tc_finalize(void)
{
	tc_kept_free();
	free(tc_g.world_leaf);
	tc_g.world_leaf = NULL;
	if (!tc_g.stats || tc_g.world_rank != 0)
		return;
	/* Only what exists: building the state here would be a collective
	 * that rank 0 runs alone while the others are in MPI_Finalize. */
	struct tc_comm *c = NULL, none = { 0 };
	int flag = 0;
	if (PMPI_Comm_get_attr(MPI_COMM_WORLD, tc_g.keyval, &c, &flag) != MPI_SUCCESS || !flag || !c)
		c = &none;
	/* One write: stderr is unbuffered, and under mpirun a line written in
	 * pieces interleaves with the other ranks' lines. */
	char line[TC_NOPS * 80 + 64];
	int n = snprintf(line, sizeof line, "topocoll: rank 0 of MPI_COMM_WORLD:");
	for (int op = 0; op < TC_NOPS && n > 0 && (size_t)n < sizeof line; op++)
		n += snprintf(line + n, sizeof line - (size_t)n, " %s %llu hierarchical %llu native%s", tc_op_name[op],
			      c->hier[op], c->native[op], op + 1 < TC_NOPS ? "," : "");
	fprintf(stderr, "%s\n", line);
}

void tc_tell(struct tc_comm *c, enum tc_op op, int hier, const char *what, const char *why, struct tc_choice *ch)
{
	if (!tc_g.verbose || c->rank != 0)
		return;
	/* once: a flag, not a count (a count of calls would overflow) */
	if (ch ? ch->told : (c->told[op] & (1 << hier)))
		return;
	if (ch)
		ch->told = 1;
	c->told[op] |= 1 << hier;
	fprintf(stderr, "topocoll: %s on a communicator of %d ranks (%d leaves): %s%s%s\n", tc_op_name[op], c->size,
		c->nleaves, what ? what : hier ? "hierarchical over leaf switches" : "the MPI's own",
		why && *why ? ": " : "", why ? why : "");
}
