/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prof.h - topoprof, the traffic profiler for MPI jobs (seed 004, chapter 7,
 * INTAP-MPI), internal interfaces between its parts:
 *
 *   count.c   per-rank counters (O(peers), fixed at MPI_Init, no I/O)
 *   wrap_*.c  the PMPI wrappers that feed them
 *   final.c   the end of the job: names, gather to rank 0, the report
 *   report.c  rank 0's report builder (no MPI: benchmarks feed it directly)
 *   fabric.c  what topod says: hops, levels (libtii)
 *   links.c   the link loads of the job's traffic (one function)
 *   svg.c     the pictures
 *
 * Errors: functions returning int return 0 or -1 with a reason written into
 * a caller's why[PROF_WHY] buffer. Nothing here aborts the job: the profiler
 * never changes whether an MPI program succeeds.
 */
#ifndef PROF_H
#define PROF_H

#include <stddef.h>
#include <stdint.h>

#define PROF_WHY 512
/* A host name slot in the gathered table (tii.h's TII_NAME_MAX + NUL). */
#define PROF_NAME_SLOT 256
/* Hop classes: 0 = the same host (no switch), 1..PROF_HOPS_MAX-1 switches,
 * PROF_HOP_UNKNOWN = topod could not say (no fabric part, no route). */
#define PROF_HOPS_MAX 16
#define PROF_HOP_UNKNOWN PROF_HOPS_MAX
#define PROF_NCLASS (PROF_HOPS_MAX + 1)
/* Fabric levels reported (the seed's fabrics have 2 to 5). */
#define PROF_LEVELS_MAX 16
/* Heatmap cells per side: up to this many ranks one cell per rank, beyond it
 * blocks of ranks (the seed's node-level granularity, 7.1). */
#define PROF_GRID_MAX 256
/* Hosts for which rank 0 keeps the hosts x hosts byte matrix (the link
 * loads): topod's matrix limit (TOPO_MATRIX_MAX). */
#define PROF_HOSTPAIR_MAX 4096

/* One sender's counters, as gathered: 4 arrays of n entries in this order. */
enum { ROW_P2P_BYTES, ROW_P2P_MSGS, ROW_COLL_BYTES, ROW_COLL_MSGS, ROW_NARRAYS };

/* ---- count.c: the per-rank state ------------------------------------------ */

/* Collective operations recorded (calls per rank, summed by rank 0). */
enum prof_coll {
	C_BARRIER, C_BCAST, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLGATHER, C_ALLGATHERV,
	C_ALLTOALL, C_ALLTOALLV, C_ALLTOALLW, C_REDUCE, C_ALLREDUCE, C_REDUCE_SCATTER,
	C_REDUCE_SCATTER_BLOCK, C_SCAN, C_EXSCAN, C_NEIGHBOR_ALLTOALL, C_NEIGHBOR_ALLTOALLV,
	C_NEIGHBOR_ALLGATHER, C_NEIGHBOR_ALLGATHERV, C_NCOLL
};
extern const char *const prof_coll_name[C_NCOLL];

struct prof_state {
	int active;           /* counters allocated and counting enabled */
	int paused;           /* MPI_Pcontrol(0) */
	int threads;          /* MPI_THREAD_MULTIPLE: count with atomic adds */
	int me, n;            /* MPI_COMM_WORLD rank and size */
	uint64_t *row;        /* [ROW_NARRAYS * n] */
	uint64_t coll_calls[C_NCOLL];
	uint64_t untracked;   /* persistent sends the request table had no room for */
	uint64_t untranslated;/* peers no world rank was found for */
	size_t heap;          /* bytes the profiler allocated on this rank */
	int reports;          /* reports written so far (MPI_Pcontrol(2)) */
};
extern struct prof_state prof;

/* Allocates the counters (MPI_Init wrapper, after PMPI_Init). */
void prof_init(void);
/* Frees everything (after the last report). */
void prof_fini(void);

/* The MPI_COMM_WORLD rank of rank r of comm (the remote group's for an
 * intercommunicator); -1 if r is MPI_PROC_NULL or not translatable. */
int prof_world_rank(void *comm, int r);
/* Adds bytes and one message to world rank w's pair of counters starting
 * at array `which` (inline: this is the cost of every send). */
static inline void prof_add2(size_t which, int w, uint64_t bytes)
{
	uint64_t *b = &prof.row[which * (size_t)prof.n + (size_t)w], *m = b + prof.n;
	if (prof.threads) {   /* MPI_THREAD_MULTIPLE: two threads may send at once */
		__atomic_fetch_add(b, bytes, __ATOMIC_RELAXED);
		__atomic_fetch_add(m, 1, __ATOMIC_RELAXED);
	} else {
		*b += bytes;
		*m += 1;
	}
}
/* Counts a point-to-point message of bytes to world rank w (-1: nobody). */
static inline void prof_p2p(int w, uint64_t bytes)
{
	if (w >= 0 && !prof.paused)
		prof_add2(ROW_P2P_BYTES, w, bytes);
}
/* Counts collective logical traffic to world rank w. */
static inline void prof_coll(int w, uint64_t bytes)
{
	if (w >= 0 && !prof.paused)
		prof_add2(ROW_COLL_BYTES, w, bytes);
}

/* Persistent sends: remember at *_init, count at MPI_Start, forget at free. */
void prof_persist_add(void *req, int w, uint64_t bytes);
void prof_persist_start(void *req);
void prof_persist_del(void *req);

/* ---- final.c ---------------------------------------------------------------- */

/* Collective over MPI_COMM_WORLD: gathers, asks topod (rank 0), writes the
 * report. tag names it ("" at MPI_Finalize, ".N" for MPI_Pcontrol(2)). */
void prof_report(const char *tag);

/* ---- report.c: rank 0 ----------------------------------------------------------- */

struct prof_link {
	char from[80], to[80];   /* a switch GUID "0x..." or a host name */
	int from_host, to_host;  /* host index for a host end, else -1 */
	uint64_t bytes, pairs;   /* traffic over it, host pairs routed over it */
	/* the largest flows behind it (host indices, bytes) */
	int nflows;
	struct { int src, dst; uint64_t bytes; } flows[4];
};

struct prof_fabric {
	int ok;                  /* the hop part is there */
	char why[PROF_WHY];      /* else why not */
	char server[128];
	uint64_t generation;
	int depth;               /* -1 if unknown */
	uint16_t *hops;          /* [nh * nh], UINT16_MAX = no route */
	/* anc[h * PROF_LEVELS_MAX + l]: host h's switch cluster at level l
	 * (index into topod's tree), -1 if none; NULL without the tree */
	long *anc;
	char levels_why[PROF_WHY];
	int links_ok;            /* the link-load part is there */
	char links_why[PROF_WHY];
	char links_how[128];     /* which libtii call computed it */
	struct prof_link *links; /* most loaded first */
	size_t nlinks;           /* kept (the top ones) */
	size_t links_total;      /* distinct loaded links */
};

struct prof_rep {
	int n;                   /* ranks */
	int nh;                  /* distinct hosts */
	char **hostname;         /* [nh] */
	int *host_of;            /* [n] */
	uint64_t *hostpair;      /* [nh * nh] all bytes (p2p + logical collective); NULL
				  * beyond PROF_HOSTPAIR_MAX hosts */
	/* per hop class: [class][0 p2p bytes, 1 p2p msgs, 2 coll bytes, 3 coll msgs] */
	uint64_t byhop[PROF_NCLASS][4];
	uint64_t bylevel[PROF_LEVELS_MAX + 2][4];  /* + intra-host, + unknown */
	uint64_t total[4];
	uint64_t coll_calls[C_NCOLL];
	uint64_t untracked, untranslated;
	int grid, block;         /* heatmap cells per side, ranks per cell */
	uint64_t *cell;          /* [grid * grid * PROF_NCLASS] bytes */
	uint64_t *hostcls;       /* [nh * PROF_NCLASS] bytes each host sent, by hop class */
	uint64_t max_rank_heap;  /* the largest profiler heap of any rank */
	struct prof_fabric fab;
	double secs_gather, secs_fabric, secs_write;
};

/* Sets up the report of n ranks whose hosts are names[r] (slots of
 * PROF_NAME_SLOT bytes). Returns 0, or -1 (out of memory). */
int rep_init(struct prof_rep *R, int n, const char *names);
/* Folds one sender's row ([ROW_NARRAYS * n]) in; rep_fabric() must have run. */
void rep_add_row(struct prof_rep *R, int src, const uint64_t *row);
/* Writes PREFIX.txt, PREFIX.json and PREFIX-{hops,heatmap,links}.svg.
 * Returns 0, or -1 with why (the first file that failed). */
int rep_write(struct prof_rep *R, const char *prefix, char *why);
void rep_free(struct prof_rep *R);
/* The hop class of a host pair (PROF_HOP_UNKNOWN without the fabric). */
int rep_class(const struct prof_rep *R, int ha, int hb);
/* The row of bylevel[] for a host pair: the lowest switch level both hosts
 * hang under (0 .. PROF_LEVELS_MAX-1), LV_HOST (one host, or two names
 * topod puts 0 hops apart), or LV_UNKNOWN. */
#define LV_HOST PROF_LEVELS_MAX
#define LV_UNKNOWN (PROF_LEVELS_MAX + 1)
int rep_level(const struct prof_rep *R, int ha, int hb);

/* ---- fabric.c ----------------------------------------------------------------- */

/* Asks topod (one handle, $TII_SERVERS) about R's hosts: tree (levels) and
 * hop matrix. Fills R->fab; on failure R->fab.ok = 0 and fab.why says why. */
void fab_query(struct prof_rep *R, void **handle);
/* Closes the handle fab_query opened. */
void fab_close(void *handle);

/* ---- links.c ------------------------------------------------------------------ */

/*
 * THE link-load function: the load of every directed link under the job's
 * host-pair traffic R->hostpair, the top `top` kept in R->fab.links. Today it
 * routes every pair with tii_get_network_path_matrix(); the libtii call for
 * explicit traffic matrices replaces its body when it lands. Fills
 * fab.links_ok / links_why / links_how.
 */
void links_compute(struct prof_rep *R, void *handle, int top);

/* ---- svg.c -------------------------------------------------------------------- */

int svg_hops(const struct prof_rep *R, const char *path);
int svg_heatmap(const struct prof_rep *R, const char *path);
int svg_links(const struct prof_rep *R, const char *path);
/* per sending host, its bytes stacked by hop class (seed Figure 7.2(c, d)) */
int svg_hosts(const struct prof_rep *R, const char *path);
/* The seed's colours (7.3): red intra-host, green 1 hop, blue 3, pink 5,
 * cyan 7; others and unknown get their own. */
const char *prof_class_colour(int cls);
/* "intra-host", "1 hop", "3 hops", "unknown" */
const char *prof_class_name(int cls, char *buf, size_t n);

#endif
