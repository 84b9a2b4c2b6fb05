/*
 * tii_stencil.c - a 3-D halo-exchange stencil that reorders its ranks with
 * libtii (tii_reorder_ranks), the way an MPI library's
 * MPI_Dist_graph_create(..., reorder = 1) would (seed 5.2.2-5.2.4).
 *
 *   mpirun -np X*Y*Z tii_stencil X Y Z [ITERS]
 *
 * Each process learns which simulated host it stands for from TII_HOST or
 * TII_HOSTMAP (line r of the file is world rank r's host; see tii_split.c).
 * Rank 0 gathers the hosts, describes the stencil exactly as
 * MPI_Dist_graph_create takes it (every rank a source, its neighbours as
 * destinations), calls tii_reorder_ranks and the hop matrix of the hosts,
 * and broadcasts both. Then, twice - in MPI_COMM_WORLD's order and in the
 * reordered communicator (MPI_Comm_split by the new rank) - every process
 * runs ITERS Jacobi sweeps on its cell of the grid with real neighbour
 * exchanges (MPI_Sendrecv of a HALO-double face per neighbour), checks every
 * value it received against the closed form of that neighbour's value, and
 * counts bytes x hops of what it sent (hops between the two processes'
 * hosts, from libtii's hop matrix). Rank 0 prints one line per order:
 *   order=world hop_bytes=B bytes=N checked=K bad=0
 *   order=reordered hop_bytes=B bytes=N checked=K bad=0
 * and the mapping's own figures (map_hop_bytes, block_hop_bytes, method).
 * Exit status 0 only if every check passed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "tii.h"

#define NAME_SLOT (TII_NAME_MAX + 1)
#define HALO 512   /* doubles per face: 4 KiB, the size of a small halo */

static int my_host(int rank, char *name)
{
	const char *h = getenv("TII_HOST");
	if (h && *h && strlen(h) < NAME_SLOT) {
		strcpy(name, h);
		return 0;
	}
	const char *map = getenv("TII_HOSTMAP");
	FILE *f = map ? fopen(map, "r") : NULL;
	if (!f)
		return -1;
	char line[1024];
	int i = 0, found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (i++ == rank && strlen(line) < NAME_SLOT) {
			strcpy(name, line);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

/* The value cell (x, y, z) holds after sweep it, element e: a closed form
 * every process can compute for any cell. */
static double value(int x, int y, int z, int it, int e)
{
	return 1000000.0 * x + 10000.0 * y + 100.0 * z + it + e * 1e-3;
}

struct grid {
	int X, Y, Z;
};

static int nbrs(const struct grid *g, int v, int *out)
{
	int x = v % g->X, y = (v / g->X) % g->Y, z = v / (g->X * g->Y), n = 0;
	int d[6][3] = { { 1, 0, 0 }, { -1, 0, 0 }, { 0, 1, 0 }, { 0, -1, 0 }, { 0, 0, 1 }, { 0, 0, -1 } };
	for (int k = 0; k < 6; k++) {
		int a = x + d[k][0], b = y + d[k][1], c = z + d[k][2];
		if (a >= 0 && a < g->X && b >= 0 && b < g->Y && c >= 0 && c < g->Z)
			out[n++] = a + g->X * (b + g->Y * c);
	}
	return n;
}

/* One run in communicator comm, where rank = grid vertex. hostidx[v] is
 * the host index of the process holding vertex v; hops[a * nh + b]. */
static void run(MPI_Comm comm, const struct grid *g, int iters, const int *hostidx, const uint16_t *hops, int nh,
		long long *hb, long long *bytes, long long *checked, long long *bad)
{
	int v, nb[6];
	MPI_Comm_rank(comm, &v);
	int n = nbrs(g, v, nb), x = v % g->X, y = (v / g->X) % g->Y, z = v / (g->X * g->Y);
	double *sbuf = malloc(HALO * sizeof(double)), *rbuf = malloc(HALO * sizeof(double));
	long long lhb = 0, lbytes = 0, lchk = 0, lbad = 0;
	for (int it = 0; it < iters; it++) {
		for (int e = 0; e < HALO; e++)
			sbuf[e] = value(x, y, z, it, e);
		for (int k = 0; k < n; k++) {
			int u = nb[k], ux = u % g->X, uy = (u / g->X) % g->Y, uz = u / (g->X * g->Y);
			MPI_Sendrecv(sbuf, HALO, MPI_DOUBLE, u, it, rbuf, HALO, MPI_DOUBLE, u, it, comm, MPI_STATUS_IGNORE);
			for (int e = 0; e < HALO; e++) {
				lchk++;
				lbad += rbuf[e] != value(ux, uy, uz, it, e);
			}
			long long b = HALO * (long long)sizeof(double);
			lbytes += b;
			if (hostidx[v] != hostidx[u])
				lhb += b * hops[hostidx[v] * nh + hostidx[u]];
		}
	}
	free(sbuf);
	free(rbuf);
	long long in[4] = { lhb, lbytes, lchk, lbad }, out[4];
	/* all: rank 0 of a reordered comm is not world rank 0, which prints */
	MPI_Allreduce(in, out, 4, MPI_LONG_LONG, MPI_SUM, comm);
	*hb = out[0], *bytes = out[1], *checked = out[2], *bad = out[3];
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	struct grid g = { argc > 3 ? atoi(argv[1]) : 0, argc > 3 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : 0 };
	int iters = argc > 4 ? atoi(argv[4]) : 3;
	if (g.X < 1 || g.Y < 1 || g.Z < 1 || g.X * g.Y * g.Z != size || iters < 1) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np X*Y*Z tii_stencil X Y Z [ITERS]\n");
		MPI_Finalize();
		return 2;
	}
	char me[NAME_SLOT] = "";
	int okh = my_host(rank, me) == 0, all_ok;
	MPI_Allreduce(&okh, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (!all_ok) {
		if (!okh)
			fprintf(stderr, "tii_stencil: rank %d: no host (TII_HOST or TII_HOSTMAP)\n", rank);
		MPI_Finalize();
		return 1;
	}
	char *names = malloc((size_t)size * NAME_SLOT);
	MPI_Allgather(me, NAME_SLOT, MPI_CHAR, names, NAME_SLOT, MPI_CHAR, MPI_COMM_WORLD);
	/* distinct hosts, in first-appearance order; host index per world rank */
	int *whost = malloc((size_t)size * sizeof(int)), nh = 0;
	const char **hn = malloc((size_t)size * sizeof(*hn));
	for (int p = 0; p < size; p++) {
		int k;
		for (k = 0; k < nh && strcmp(hn[k], names + (size_t)p * NAME_SLOT); k++)
			;
		if (k == nh)
			hn[nh++] = names + (size_t)p * NAME_SLOT;
		whost[p] = k;
	}
	int *newrank = malloc((size_t)size * sizeof(int));
	uint16_t *hops = malloc((size_t)nh * nh * sizeof(uint16_t));
	long long fig[4] = { 0 };   /* rc, map hop-bytes, block hop-bytes, scotch */
	if (!rank) {
		/* the graph as MPI_Dist_graph_create takes it */
		int *src = malloc((size_t)size * sizeof(int)), *deg = malloc((size_t)size * sizeof(int));
		int *dst = malloc((size_t)size * 6 * sizeof(int)), m = 0;
		const char **rh = malloc((size_t)size * sizeof(*rh));
		for (int p = 0; p < size; p++) {
			src[p] = p;
			deg[p] = nbrs(&g, p, dst + m);
			m += deg[p];
			rh[p] = names + (size_t)p * NAME_SLOT;
		}
		tii_t *t = NULL;
		tii_map_info_t info;
		int rc = tii_open(&t, NULL);
		if (!rc)
			rc = tii_reorder_ranks(t, rh, size, size, src, deg, dst, NULL, newrank, &info);
		if (!rc)
			rc = tii_get_hop_matrix(t, hn, (size_t)nh, hops);
		if (rc)
			fprintf(stderr, "tii_stencil: %s (%s)\n", tii_strerror(rc), t ? tii_last_message(t) : "");
		else
			fig[1] = (long long)info.hop_bytes, fig[2] = (long long)info.block_hop_bytes, fig[3] = info.scotch;
		fig[0] = rc;
		tii_close(t);
		free(src), free(deg), free(dst), free(rh);
	}
	MPI_Bcast(fig, 4, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
	if (fig[0]) {
		MPI_Finalize();
		return 1;
	}
	MPI_Bcast(newrank, size, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Bcast(hops, nh * nh, MPI_UINT16_T, 0, MPI_COMM_WORLD);

	/* a permutation that keeps every host's process count */
	int perm_ok = 1, *seen = calloc((size_t)size, sizeof(int));
	for (int p = 0; p < size; p++) {
		if (newrank[p] < 0 || newrank[p] >= size || seen[newrank[p]]++)
			perm_ok = 0;
	}
	free(seen);

	MPI_Comm re;
	MPI_Comm_split(MPI_COMM_WORLD, 0, newrank[rank], &re);
	int *rhost = malloc((size_t)size * sizeof(int)), mine = whost[rank];
	MPI_Allgather(&mine, 1, MPI_INT, rhost, 1, MPI_INT, re);   /* host per new rank */

	long long w[4], r[4];
	run(MPI_COMM_WORLD, &g, iters, whost, hops, nh, &w[0], &w[1], &w[2], &w[3]);
	run(re, &g, iters, rhost, hops, nh, &r[0], &r[1], &r[2], &r[3]);
	int status = 0;
	if (!rank) {
		printf("tii_stencil ranks=%d hosts=%d grid=%dx%dx%d iters=%d permutation=%d method=%s "
		       "map_hop_bytes=%lld block_hop_bytes=%lld\n",
		       size, nh, g.X, g.Y, g.Z, iters, perm_ok, fig[3] ? "scotch" : "block", fig[1], fig[2]);
		printf("order=world hop_bytes=%lld bytes=%lld checked=%lld bad=%lld\n", w[0], w[1], w[2], w[3]);
		printf("order=reordered hop_bytes=%lld bytes=%lld checked=%lld bad=%lld\n", r[0], r[1], r[2], r[3]);
		status = !perm_ok || w[3] || r[3] || !w[2] || !r[2];
	}
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Comm_free(&re);
	free(names), free(whost), free(hn), free(newrank), free(hops), free(rhost);
	MPI_Finalize();
	return status;
}
