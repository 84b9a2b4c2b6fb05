/*
 * tii_split.c - an MPI program that splits MPI_COMM_WORLD by switch cluster,
 * as the seed's section 5.2.2 does, using libtii (tii.h) against topod.
 *
 *   rank 0: tii_open(TII_SERVERS) -> tii_get_network_depth ->
 *           per level, ONE tii_connected_switch_clusters_at_depth call for
 *           the whole job -> MPI_Bcast of the IDs
 *   every rank: tii_cluster_colors (dense colours, same on every rank) ->
 *           MPI_Comm_split(MPI_COMM_WORLD, colour, rank) -> prints its line
 *
 * Only rank 0 talks to topod, so a 4,096-rank job costs topod one request
 * per level, not 4,096 (seed 5.2.2: "to prevent overwhelming the topology
 * discovery service").
 *
 * Which host a rank stands for. On a real cluster a rank is on the host
 * MPI_Get_processor_name() names, and that is what this program uses when
 * nothing else is said. In a test every rank runs on this one machine, so
 * each rank is told which simulated fabric host it stands for, in this order:
 *
 *   1. $TII_HOST, if set: this process's host. Set it per process with
 *      Open MPI's MPMD syntax, one app context per rank (an -x inside an app
 *      context applies to that context only):
 *        mpirun -x TII_SERVERS -np 1 -x TII_HOST=c401-101 ./tii_split : -np 1 -x TII_HOST=c402-101 ./tii_split ...
 *   2. $TII_HOSTMAP, if set: a file naming one host per line, the line for
 *      rank 0 first (blank lines and lines starting with '#' do not count),
 *      like Open MPI's rankfile. Every rank reads it and takes the line of
 *      its own MPI_COMM_WORLD rank:
 *        mpirun -np 8 -x TII_HOSTMAP=hosts.map -x TII_SERVERS ./tii_split
 *   3. MPI_Get_processor_name().
 *
 * Rank 0 gathers every rank's name (MPI_Gather) and asks about them all.
 *
 * Output, one line per rank and level (leaf level first, then each level up
 * to, not including, the whole fabric at level 0), plus one header line from
 * rank 0; tests/integration/t_mpi.sh parses these:
 *
 *   tii_split depth=3 levels=2 ranks=8 generation=G server=127.0.0.1:7878
 *   tii_split rank=3 host=c402-101 level=2 clusters=5 cluster=0x... color=1 size=2 subrank=1 members=1,3
 *
 * colour is the dense colour passed to MPI_Comm_split, size and subrank are
 * MPI_Comm_size/MPI_Comm_rank of the sub-communicator, members its ranks'
 * MPI_COMM_WORLD ranks in sub-communicator order.
 *
 * Exit status: 0, or 1 on every rank if rank 0's query failed (the reason
 * goes to rank 0's stderr as "tii_split: WHAT: WHY (DETAIL)").
 *
 * Build: mpicc -Ilibtii tests/mpi/tii_split.c -Lbuild/lib -ltii -o tii_split
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "tii.h"

/* Levels a job is split at: leaf up to level 1. Real fabrics have a depth of
 * 2 to 5; this bounds the broadcast header without a second Bcast. */
#define LEVELS_MAX 16
/* A host name slot in the gathered table: tii.h's longest name plus NUL. */
#define NAME_SLOT (TII_NAME_MAX + 1)
/* A map file line: a host name, maybe with trailing blanks; longer is an error. */
#define MAP_LINE_MAX 1024

/* Copies this process's host name into name[NAME_SLOT]; returns 0, or -1
 * with a message in why[]. */
static int my_host(int rank, char *name, char *why, size_t whylen)
{
	const char *h = getenv("TII_HOST");
	if (h && *h) {
		if (strlen(h) >= NAME_SLOT) {
			snprintf(why, whylen, "TII_HOST is longer than %d bytes", TII_NAME_MAX);
			return -1;
		}
		strcpy(name, h);
		return 0;
	}
	const char *map = getenv("TII_HOSTMAP");
	if (map && *map) {
		FILE *f = fopen(map, "r");
		if (!f) {
			snprintf(why, whylen, "TII_HOSTMAP %s: cannot open", map);
			return -1;
		}
		char line[MAP_LINE_MAX];
		int i = 0, found = 0;
		while (!found && fgets(line, sizeof(line), f)) {
			if (!strchr(line, '\n') && !feof(f)) {
				snprintf(why, whylen, "TII_HOSTMAP %s: line %d too long", map, i + 1);
				fclose(f);
				return -1;
			}
			line[strcspn(line, " \t\r\n")] = '\0';
			if (!line[0] || line[0] == '#')
				continue;
			if (i++ == rank) {
				if (strlen(line) >= NAME_SLOT) {
					snprintf(why, whylen, "TII_HOSTMAP %s: host too long", map);
					fclose(f);
					return -1;
				}
				strcpy(name, line);
				found = 1;
			}
		}
		fclose(f);
		if (!found) {
			snprintf(why, whylen, "TII_HOSTMAP %s: no host for rank %d (%d listed)", map, rank, i);
			return -1;
		}
		return 0;
	}
	char proc[MPI_MAX_PROCESSOR_NAME];
	int len = 0;
	MPI_Get_processor_name(proc, &len);
	if (len <= 0 || len >= NAME_SLOT) {
		snprintf(why, whylen, "MPI_Get_processor_name gave no usable name");
		return -1;
	}
	memcpy(name, proc, (size_t)len);
	name[len] = '\0';
	return 0;
}

/*
 * Rank 0 only: asks topod for the depth and, per level, every rank's
 * cluster ID in one request. hdr gets {status, depth, nlevels, level...};
 * ids[l * n + r] the ID of rank r at hdr[3 + l]. Returns 0, else prints why.
 */
static int query(const char *const *hosts, int n, int *hdr, uint64_t *ids, uint64_t *gen)
{
	tii_t *t = NULL;
	int depth = 0, rc = tii_open(&t, NULL);
	if (rc) {
		fprintf(stderr, "tii_split: open: %s (TII_SERVERS=%s)\n", tii_strerror(rc),
			getenv("TII_SERVERS") ? getenv("TII_SERVERS") : "");
		return rc;
	}
	rc = tii_get_network_depth(t, &depth);
	if (rc) {
		fprintf(stderr, "tii_split: depth: %s (%s)\n", tii_strerror(rc), tii_last_message(t));
		tii_close(t);
		return rc;
	}
	if (depth < 1) {
		fprintf(stderr, "tii_split: depth: topod says %d\n", depth);
		tii_close(t);
		return TII_E_PROTO;
	}
	/* Leaf level first; level 0 (the whole fabric) only when it is the leaf
	 * level, i.e. a single-switch fabric. */
	int nlevels = 0;
	for (int l = depth - 1; l >= (depth > 1 ? 1 : 0) && nlevels < LEVELS_MAX; l--) {
		/* every rank's ID in one request; the count (the seed's
		 * tii_num_switch_clusters_at_depth) every rank gets from the IDs */
		rc = tii_connected_switch_clusters_at_depth(t, hosts, (size_t)n, l, ids + (size_t)nlevels * n,
							    NULL);
		if (rc) {
			fprintf(stderr, "tii_split: clusters at level %d for %d ranks: %s (%s)\n", l, n,
				tii_strerror(rc), tii_last_message(t));
			tii_close(t);
			return rc;
		}
		hdr[3 + nlevels++] = l;
	}
	hdr[1] = depth;
	hdr[2] = nlevels;
	*gen = tii_last_generation(t);
	printf("tii_split depth=%d levels=%d ranks=%d generation=%" PRIu64 " server=%s\n", depth, nlevels, n,
	       *gen, tii_current_server(t) ? tii_current_server(t) : "-");
	fflush(stdout);
	tii_close(t);
	return 0;
}

int main(int argc, char **argv)
{
	int rank, n;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);

	/* Every rank must reach the same collectives, so a local failure is
	 * agreed on (MPI_Allreduce) before anyone goes on or stops. */
	char name[NAME_SLOT] = "", why[512] = "";
	int bad = my_host(rank, name, why, sizeof(why)) ? 1 : 0, anybad = 0;
	if (bad)
		fprintf(stderr, "tii_split: rank %d: %s\n", rank, why);
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (anybad) {
		MPI_Finalize();
		return 1;
	}

	/* only rank 0 needs the names */
	char *table = malloc(rank == 0 ? (size_t)n * NAME_SLOT : 1);
	const char **hosts = malloc(rank == 0 ? (size_t)n * sizeof(*hosts) : 1);
	uint64_t *ids = malloc((size_t)n * LEVELS_MAX * sizeof(*ids));
	int *colors = malloc((size_t)n * sizeof(*colors));
	int *members = malloc((size_t)n * sizeof(*members));
	char *line = malloc((size_t)n * 12 + 2 * NAME_SLOT + 256);
	bad = !table || !hosts || !ids || !colors || !members || !line;
	if (bad)
		fprintf(stderr, "tii_split: rank %d: out of memory\n", rank);
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (anybad) {
		MPI_Finalize();
		return 1;
	}
	MPI_Gather(name, NAME_SLOT, MPI_CHAR, table, NAME_SLOT, MPI_CHAR, 0, MPI_COMM_WORLD);
	for (int r = 0; rank == 0 && r < n; r++)
		hosts[r] = table + (size_t)r * NAME_SLOT;

	/* hdr = {status, depth, nlevels, level[0..nlevels-1]} */
	int hdr[3 + LEVELS_MAX] = { 0 };
	uint64_t gen = 0;
	if (rank == 0)
		hdr[0] = query(hosts, n, hdr, ids, &gen);
	MPI_Bcast(hdr, 3 + LEVELS_MAX, MPI_INT, 0, MPI_COMM_WORLD);
	int rc = hdr[0] ? 1 : 0;
	if (!rc)
		MPI_Bcast(ids, hdr[2] * n, MPI_UINT64_T, 0, MPI_COMM_WORLD);

	for (int li = 0; !rc && li < hdr[2]; li++) {
		const uint64_t *lid = ids + (size_t)li * n;
		int ncolors = 0;
		/* Cluster IDs are 64-bit hashes and MPI colours are non-negative
		 * ints: every rank maps the same IDs to the same dense colours. */
		if (tii_cluster_colors(lid, (size_t)n, colors, &ncolors)) {
			/* Only TII_E_NOMEM is possible here; MPI_Comm_split is
			 * collective, so the others must not wait for us. */
			fprintf(stderr, "tii_split: rank %d: tii_cluster_colors failed\n", rank);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		MPI_Comm sub;
		/* key = world rank keeps the world order inside each cluster */
		MPI_Comm_split(MPI_COMM_WORLD, colors[rank], rank, &sub);
		int size, subrank;
		MPI_Comm_size(sub, &size);
		MPI_Comm_rank(sub, &subrank);
		MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, sub);
		int len = snprintf(line, 2 * NAME_SLOT + 256,
				   "tii_split rank=%d host=%s level=%d clusters=%d cluster=0x%016" PRIx64
				   " color=%d size=%d subrank=%d members=",
				   rank, name, hdr[3 + li], ncolors, lid[rank], colors[rank], size, subrank);
		for (int i = 0; i < size; i++)
			len += sprintf(line + len, "%s%d", i ? "," : "", members[i]);
		/* one write per line, so mpirun never interleaves two ranks' lines */
		printf("%s\n", line);
		fflush(stdout);
		MPI_Comm_free(&sub);
	}

	free(line);
	free(members);
	free(colors);
	free(ids);
	free(hosts);
	free(table);
	MPI_Finalize();
	return rc;
}
