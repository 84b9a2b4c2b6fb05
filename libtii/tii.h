/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tii.h - the Topology Information Interface: what MPI libraries, schedulers
 * and tools ask topod about an InfiniBand fabric (Subramoni 2013, sections
 * 5.2.1, 6.2.1, 8.2.2), over topod's line protocol (docs/protocol.md).
 *
 * Life cycle (hwloc-like): tii_open() -> optional tii_set_timeout() ->
 * queries -> tii_close(). A tii_t is an opaque handle owning one TCP
 * connection to one topod at a time, chosen from a list of servers.
 *
 * Errors: every int-returning call returns 0 (TII_OK) or a negative TII_E_*
 * code; tii_strerror() names it and tii_last_message() says what the server
 * or the network said. On error, output arguments are left untouched unless
 * the call says otherwise. Nothing here prints, exits, aborts or installs
 * signal handlers (writes use MSG_NOSIGNAL, so a dead server is an error,
 * never a SIGPIPE).
 *
 * Threads: there is no process-wide state. All state lives in a tii_t, which
 * one thread at a time may use: open one handle per thread (they are cheap,
 * one socket each), or serialise access to a shared one yourself.
 * tii_strerror(), tii_cluster_colors() and the *_free() functions may be
 * called from any thread. tii_open() reads the environment (getenv), so do
 * not call setenv() concurrently with it.
 *
 * Servers and failover: a request goes to the server that answered last
 * (the first of the list initially). If it cannot be reached, does not
 * answer within the timeout, closes the connection mid-reply, answers
 * something that is not the protocol, sends more than the reply limit, is
 * busy, has no fabric yet or does not know the command, the same request
 * goes to the next server of the list, wrapping around, each tried once
 * (after the busy retries below). Queries are read-only, so a retry is
 * safe. Answers about the fabric (a host not found, no route) are final
 * and never retried elsewhere. When every server failed, the call returns
 * the most telling of their errors: TII_E_TOOBIG, then a server's own
 * refusal (TII_E_NOFABRIC, TII_E_UNSUPPORTED, TII_E_NOMEM, TII_E_BUSY), then
 * TII_E_PROTO, TII_E_TIMEOUT, TII_E_IO, and TII_E_CONNECT only when every
 * server refused the connection or was unreachable.
 *
 * Connections: the handle keeps its connection open between calls (one
 * round trip per call, no reconnect). If topod closed it meanwhile (its
 * idle timeout), the next call reconnects to the same server quietly.
 *
 * Timeouts: one request to one server (connect, send, the whole reply,
 * and the BUSY retries below) must finish within the handle's timeout,
 * checked while data arrives too: a server that keeps streaming is cut off
 * at the deadline like one that goes quiet. So a call takes at most
 * (number of servers) x timeout, however the servers misbehave. Host names
 * are resolved with getaddrinfo(), which the timeout cannot bound: use
 * numeric addresses where that matters. Raise the timeout for very large
 * answers (a 4,096-host path matrix is hundreds of MB of text).
 *
 * Memory: a reply is read line by line and never more than
 * tii_get_max_reply_bytes() of it (TII_E_TOOBIG past that); results grow
 * as lines arrive and are capped by what the request can produce (n x n
 * cells for n hosts), never sized by counts the server announces. Names in
 * replies longer than the protocol's (TII_HOSTNAME_MAX for hosts and switch
 * descriptions, TII_NAME_MAX for names as asked) are TII_E_PROTO.
 *
 * Busy servers: ERR BUSY and a refused connection are retried on the same
 * server with jittered exponential backoff (10 ms doubling to 500 ms,
 * each wait drawn between half and all of it) within that server's
 * timeout; refusals are retried for at most TII_REFUSED_RETRY_MS, so a
 * server that is down costs only that. Then the request fails over.
 *
 * Round trips: every call that takes a host list sends one protocol request,
 * whatever the length of the list (up to the protocol's limits, else
 * TII_E_TOOMANY); rank 0 of an MPI job can ask for the whole job at once
 * and broadcast (Subramoni 2013, 5.2.2).
 *
 * Hosts are named as in docs/protocol.md: a hostname ("c401-101"), a host
 * and HCA ("c401-101/HCA-2"), a port or node GUID ("0x0002c90300000011") or
 * a LID ("lid:17"). Names are checked before anything is sent: an empty
 * name, one longer than TII_NAME_MAX or one with a byte outside printable
 * ASCII or a space is TII_E_INVAL.
 *
 * Generations: topod numbers each fabric snapshot it serves. Each answer is
 * computed from one generation; tii_last_generation() tells which. Two
 * answers from the same generation are consistent with each other.
 */
#ifndef TII_H
#define TII_H

#include <stddef.h>
#include <stdint.h>

/* The protocol's limits, shared with topod (installed beside this file). */
#include "topo_limits.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TII_API __attribute__((visibility("default")))
#else
#define TII_API
#endif

/* The API level. A new level moves, together (t_tii_version checks):
 * VERSION (MAJOR.MINOR.0, the tree's one version: the library's file name,
 * tii.pc, the packages), a new node TII_MAJOR.MINOR in libtii/libtii.map
 * holding the level's new calls, their lines in debian/libtii1.symbols, a
 * debian/changelog entry and the man pages' headers. */
#define TII_VERSION_MAJOR 1
#define TII_VERSION_MINOR 9   /* 1.1: reply limit, resolve, hosts, hopsbatch, ping; 1.2: simgrid platform, load time;
                                * 1.3: cluster and switch names, gone hosts, host-level schedules, route, map times;
                                * 1.4: pick's balanced hosts, bottleneck and injection limit, pick trade, pick pattern;
                                * 1.5: allgather schedules kShift, route-ordered ring, ring, best;
                                * 1.6: pick's default rule on leaves (any), auto, random picks' prediction;
                                * 1.7: schedules at every message size: steps in flight, the MPIs' own;
                                *      info's held (a generation the shrink guard holds back);
                                * 1.8: picks judged by the all-to-all the job runs (tii_set_pick_run);
                                * 1.9: TII_E_NOGENERATION, TII_E_NOPLANE, TII_E_GONE (were TII_E_NOTFOUND) */

/* Error codes (negative); 0 is success. */
#define TII_OK            0
#define TII_E_INVAL      -1  /* bad argument: NULL, n == 0, bad host name, bad server list */
#define TII_E_NOMEM      -2  /* out of memory, here or in topod (ERR NOMEM) */
#define TII_E_CONNECT    -3  /* no server could be connected to */
#define TII_E_TIMEOUT    -4  /* a server did not answer in time (also mid-reply), or its ERR TIMEOUT */
#define TII_E_IO         -5  /* connection lost (closed or reset mid-reply) */
#define TII_E_PROTO      -6  /* the reply is not topod's protocol, or inconsistent */
#define TII_E_NOTFOUND   -7  /* a host, HCA, GUID or LID names no end port */
#define TII_E_NOROUTE    -8  /* the route between two hosts fails */
#define TII_E_NOFABRIC   -9  /* topod has not received a fabric yet */
#define TII_E_TOOMANY   -10  /* more hosts than one request allows */
#define TII_E_BUSY      -11  /* topod refused the connection: too many clients */
#define TII_E_SERVER    -12  /* topod refused the request (USAGE, PROTO, DENIED, ...) */
#define TII_E_UNSUPPORTED -13 /* topod does not know the command */
#define TII_E_TOOBIG    -14  /* the reply is larger than tii_get_max_reply_bytes() */
/* Until 1.8 these three were TII_E_NOTFOUND ("no such host"), which they
 * are not (1.9): */
#define TII_E_NOGENERATION -15 /* a generation topod's history does not hold (ERR NOGENERATION) */
#define TII_E_NOPLANE   -16  /* a plane topod does not serve (ERR NOPLANE) */
#define TII_E_GONE      -17  /* a host earlier generations had, not in the fabric now (ERR GONE):
                              * tii_last_message() says since when */

/* Longest name a call accepts (a host, "host/HCA-n", a GUID, "lid:N"):
 * topod's limit for a name in a request. */
#define TII_NAME_MAX TOPO_QUERY_NAME_MAX
/* Longest host name or switch description in a reply: a NodeDescription
 * is 64 bytes, so no hostname is longer. */
#define TII_HOSTNAME_MAX TOPO_NAME_MAX
/* The protocol's request-line limit (docs/protocol.md, Limits), without the
 * newline; a longer request is TII_E_TOOMANY before anything is sent. */
#define TII_REQUEST_MAX TOPO_LINE_MAX
/* Words after the command in one request. */
#define TII_ARGS_MAX TOPO_ARGS_MAX
/* Hosts in one hopsmatrix/pathmatrix/shared request (topod's limit). */
#define TII_MATRIX_MAX TOPO_MATRIX_MAX
/* Default bound on the bytes of one reply, and the least
 * tii_set_max_reply_bytes() accepts. The default holds every legitimate
 * reply of a 4,096-host job (a hop matrix is ~35 MB, a path matrix ~10 MB
 * with 24 hosts per leaf) except a path matrix of thousands of hosts each
 * on its own leaf switch (up to ~240 MB): raise it for that. */
#define TII_MAX_REPLY_DEFAULT ((size_t)64 << 20)
#define TII_MAX_REPLY_MIN ((size_t)64 << 10)
/* How long refused connections to one server are retried before failover. */
#define TII_REFUSED_RETRY_MS 1000
/* Default per-request timeout, and the bounds tii_set_timeout() accepts. */
#define TII_TIMEOUT_DEFAULT_MS 10000
#define TII_TIMEOUT_MAX_MS (24 * 3600 * 1000)
/* The server list used when tii_open() gets NULL and $TII_SERVERS is unset. */
#define TII_DEFAULT_SERVERS "127.0.0.1:" TOPO_PORT_DEFAULT
/* Servers in one list. */
#define TII_SERVERS_MAX 16

typedef struct tii tii_t;

/* ---- handle -------------------------------------------------------------- */

/*
 * Opens a handle. servers: "host:port[,host:port...]" ("[v6addr]:port" for
 * IPv6); NULL means $TII_SERVERS, else TII_DEFAULT_SERVERS. The timeout
 * starts as $TII_TIMEOUT_MS if set and valid, else TII_TIMEOUT_DEFAULT_MS.
 * Does not connect (the first query does), so it fails only for a bad list
 * (TII_E_INVAL) or memory (TII_E_NOMEM). On success *out is a new handle,
 * caller closes it with tii_close(); on error *out is untouched.
 */
TII_API int tii_open(tii_t **out, const char *servers);

/* Closes the connection and frees the handle. NULL is a no-op. */
TII_API void tii_close(tii_t *t);

/* The per-request timeout in milliseconds, 1 .. TII_TIMEOUT_MAX_MS; see the
 * top. TII_E_INVAL outside that range. */
TII_API int tii_set_timeout(tii_t *t, int ms);
TII_API int tii_get_timeout(const tii_t *t);

/* The most bytes one reply may have (lines and newlines), bounding the
 * memory a call uses however the server misbehaves; a longer reply is
 * TII_E_TOOBIG (and the next server is tried). Starts as
 * $TII_MAX_REPLY_BYTES if set and valid, else TII_MAX_REPLY_DEFAULT.
 * Set: TII_E_INVAL below TII_MAX_REPLY_MIN. Get: 0 for a NULL handle. */
TII_API int tii_set_max_reply_bytes(tii_t *t, size_t bytes);

/*
 * Fabric planes: a topod may serve several subnets (the rails of a
 * multi-rail cluster, a compute and a storage fabric), each with its own
 * generations, routes and hierarchy. By default (NULL or "auto") each
 * request is answered from the plane its hosts are on (the first plane for
 * a host on two). A plane name (TII_PLANE_NAME_MAX of [A-Za-z0-9_-]) asks
 * everything of that plane: sent once per connection, before the first
 * request; a plane topod does not serve fails that request with
 * TII_E_NOPLANE (tii_last_message() names the planes served).
 * tii_get_planes() lists them.
 */
#define TII_PLANE_NAME_MAX TOPO_PLANE_NAME_MAX
TII_API int tii_set_plane(tii_t *t, const char *plane);
/* The plane set, or "auto". Never NULL for a valid handle. */
TII_API const char *tii_get_plane(const tii_t *t);

struct tii_plane {
	char name[TII_PLANE_NAME_MAX + 1];
	uint64_t generation, sm_guid;
	uint32_t nodes, switches, hosts;
	int selected;         /* the plane this handle asks (tii_set_plane) */
	uint64_t port_guid;   /* with a host: its port on this plane */
	uint16_t lid;
};
/* The planes topod serves (host NULL), or those host is on (TII_E_NOTFOUND
 * if none). planes[] has room for TOPO_PLANES_MAX; *n gets the count. */
TII_API int tii_get_planes(tii_t *t, const char *host, struct tii_plane *planes, size_t *n);
TII_API size_t tii_get_max_reply_bytes(const tii_t *t);

/* The generation of the last successful answer on t (0 before any). */
TII_API uint64_t tii_last_generation(const tii_t *t);

/* A one-line description of the last error on t: topod's ERR text or the
 * network failure ("127.0.0.1:7878: connection refused"); "" after a
 * success. Borrowed until the next call on t; never NULL. */
TII_API const char *tii_last_message(const tii_t *t);

/* The server ("host:port", as given) that answered last, or NULL before
 * any answer. Borrowed until tii_close(t). */
TII_API const char *tii_current_server(const tii_t *t);

/* A static description of a TII_E_* code; never NULL. */
TII_API const char *tii_strerror(int err);

/* ---- the fabric ------------------------------------------------------------ */

/* Fabric counts from topod's "info". Strings are NUL-terminated, cut if
 * longer than their arrays. */
struct tii_info {
	uint64_t generation;
	uint32_t nodes, switches, cas, links, hosts, max_lid;
	int depth;                /* levels of the hierarchy (as tii_get_network_depth) */
	uint64_t sm_guid;
	uint64_t sweep;
	uint64_t snapshot_us;     /* when the snapshot was taken (us since epoch) */
	uint64_t received_us;     /* when topod received it */
	char engine[32];          /* routing engine, "-" if unknown */
	char source[256];         /* where the snapshot came from, unescaped */
	/* 1.7: a generation topod holds back, not served, because it reaches
	 * far fewer HCAs or switches (the shrink guard, docs/reliability.md);
	 * 0: none, or a topod that does not say. */
	uint64_t held;
};
TII_API int tii_get_info(tii_t *t, struct tii_info *info);
/* ABI: struct tii_info grew in 1.7 and the caller owns it: a program built
 * against 1.6 passes the smaller struct to tii_get_info, which fills only
 * its fields; this header sends programs built against it to
 * tii_get_info_17, which fills the whole struct. Call tii_get_info. */
TII_API int tii_get_info_17(tii_t *t, struct tii_info *info);
#define tii_get_info tii_get_info_17

/* The current generation (a new snapshot, a new number). */
TII_API int tii_get_generation(tii_t *t, uint64_t *gen);

/* ---- the switch-cluster hierarchy (Subramoni 2013, 2.8.1, 5.2.1) ----------- */

/* Levels 0 (the whole fabric, one root per connected part) .. depth-1 (leaf
 * switches). The hierarchy is per host: each is placed by its default rail,
 * and naming another rail ("host/HCA-2") in these calls is TII_E_INVAL. */
/* Levels (1.3; docs/libtii.md, "Levels"): the *_at_depth calls take a
 * level of the hierarchy, 0 = the top (the whole fabric) to depth-1 = the
 * leaf switches; a negative level counts from the leaves, -1 being the
 * leaf switches whatever the depth (a topod before 1.3 refuses it). "depth"
 * in the names is the old word for level, kept for the ABI. */
#define TII_LEVEL_TOP 0
#define TII_LEVEL_LEAF (-1)
#define TII_LEVELS_MAX 64
TII_API int tii_get_network_depth(tii_t *t, int *depth);

/* Distinct switch clusters the n hosts reach at level depth. */
TII_API int tii_num_switch_clusters_at_depth(tii_t *t, const char *const *hosts, size_t n, int depth,
					     int *count);

/* The ID of host's switch cluster at level depth. IDs are stable across
 * rebuilds of an unchanged fabric (a hash of the member hosts' GUIDs). */
TII_API int tii_connected_switch_cluster_at_depth(tii_t *t, const char *host, int depth,
						  uint64_t *cluster_id);

/* The same for n hosts in one request: ids[i] for hosts[i]. ids must hold n
 * entries; count (may be NULL) gets the number of distinct IDs. */
TII_API int tii_connected_switch_clusters_at_depth(tii_t *t, const char *const *hosts, size_t n,
						   int depth, uint64_t *ids, int *count);

/*
 * Maps n cluster IDs to dense colours for MPI_Comm_split: colors[i] in
 * 0..k-1, equal IDs get equal colours, and colours follow ascending ID
 * order (the smallest ID is colour 0), so every rank computes the same
 * colours from the same IDs. ncolors (may be NULL) gets k. colors may not
 * alias ids. No I/O; TII_E_NOMEM or TII_E_INVAL only.
 */
TII_API int tii_cluster_colors(const uint64_t *ids, size_t n, int *colors, int *ncolors);

/* tii_connected_switch_clusters_at_depth() + tii_cluster_colors(): one
 * request. colors must hold n entries. */
TII_API int tii_get_cluster_colors_at_depth(tii_t *t, const char *const *hosts, size_t n, int depth,
					    int *colors, int *ncolors);

/*
 * The whole hierarchy, from topod's "tree". Clusters come children first
 * (a cluster's index is below its parent's); roots have parent -1. Every
 * host hangs off one cluster (its lowest); a host alone in its part of the
 * fabric gets a root cluster holding just itself.
 */
#define TII_DIST_INF 65535
struct tii_tree_cluster {
	uint64_t id;
	long parent;         /* index into clusters[], -1 for a root */
	int level;           /* 0 for roots */
	int dist;            /* distance (hops) at which its members joined; TII_DIST_INF
	                      * for a root whose parts never join at a finite distance
	                      * (an unreachable host, a disconnected fabric) and for a
	                      * lone host (topod: "dist=inf") */
	uint32_t nhosts;     /* hosts below it, at any depth */
};
struct tii_tree_host {
	char *name;
	long parent;         /* index into clusters[] */
};
/* 1.3: a host an earlier generation had and this one lacks (topod keeps
 * it while its history holds that generation; docs/protocol.md, tree). */
struct tii_tree_gone {
	char *name;
	long parent;         /* the cluster its leaf switch hangs off now, -1 if none */
	uint64_t leaf;       /* node GUID of that leaf switch, 0 if unknown */
	uint64_t last_gen;   /* the last generation it was in */
};
typedef struct tii_tree {
	uint64_t generation;
	int depth;
	size_t nclusters;
	struct tii_tree_cluster *clusters;
	size_t nhosts;
	struct tii_tree_host *hosts;   /* in topod's order */
	/* 1.3, at the end (libtii allocates this struct): */
	char **names;                  /* [nclusters] the cluster's name, [A-Za-z0-9._-]: its
	                                * switch's NodeDescription, else a sw_/cl_ fallback
	                                * (docs/protocol.md, tree); "" from an older topod */
	size_t ngone;
	struct tii_tree_gone *gone;    /* sorted by name; none from an older topod */
} tii_tree_t;
/* On success *out is new: caller frees it with tii_tree_free(). */
TII_API int tii_get_tree(tii_t *t, tii_tree_t **out);
TII_API void tii_tree_free(tii_tree_t *tree);   /* NULL is a no-op */

/* 1.3: every switch's name, as cluster names use it (topod's `switches`),
 * sorted by node GUID. On success *out is new (free with
 * tii_switch_names_free) and *n its length. An older topod:
 * TII_E_UNSUPPORTED. */
struct tii_switch_name {
	uint64_t guid;       /* node GUID */
	char *name;          /* [A-Za-z0-9._-], at most TII_NAME_MAX bytes */
};
TII_API int tii_get_switch_names(tii_t *t, struct tii_switch_name **out, size_t *n);
TII_API void tii_switch_names_free(struct tii_switch_name *v, size_t n);
/* The name of the switch with node GUID guid in v (from
 * tii_get_switch_names), or NULL. No I/O. */
TII_API const char *tii_switch_name_of(const struct tii_switch_name *v, size_t n, uint64_t guid);

/* ---- routes ---------------------------------------------------------------- */

/* Switches traversed from a to b (1 for two hosts on one leaf switch). */
TII_API int tii_get_hops(tii_t *t, const char *a, const char *b, int *hops);

struct tii_path_switch {
	uint64_t guid;
	int in_port, out_port;   /* the ports the route enters and leaves by */
	char *name;              /* the switch's NodeDescription, unescaped */
};
typedef struct tii_path {
	uint64_t generation;
	char *src, *dst;         /* as topod names them */
	size_t nswitches;        /* == hops */
	struct tii_path_switch *switches;  /* in route order */
} tii_path_t;
/* The route from a to b. On success *out is new: caller frees it with
 * tii_path_free(). */
TII_API int tii_get_path(tii_t *t, const char *a, const char *b, tii_path_t **out);
TII_API void tii_path_free(tii_path_t *path);   /* NULL is a no-op */

/*
 * The hop count of every ordered pair of the n hosts, in one request:
 * matrix[i * n + j] = hops from hosts[i] to hosts[j], 0 on the diagonal,
 * UINT16_MAX where the route fails. This is PMIx's fabric cost matrix
 * (n x n uint16_t, row-major). matrix must hold n * n entries; n <=
 * TII_MATRIX_MAX. On error the matrix may have been partly written.
 */
TII_API int tii_get_hop_matrix(tii_t *t, const char *const *hosts, size_t n, uint16_t *matrix);

/*
 * The route of every ordered pair of n hosts (Subramoni 2013, 6.2.1), in one request.
 * The hosts must be distinct (topod refuses a repeated host: TII_E_INVAL).
 * Read it with tii_path_matrix_route(); the fields are for the owner.
 */
typedef struct tii_path_matrix {
	uint64_t generation;
	size_t n;
	int *status;        /* [n * n] 0, or TII_E_NOROUTE where the route fails */
	size_t *first;      /* [n * n] index of the pair's first GUID in guids[] */
	uint32_t *len;      /* [n * n] its switch count */
	uint64_t *guids;    /* every route's switch GUIDs, concatenated */
	size_t nguids;
} tii_path_matrix_t;
/* On success *out is new: caller frees it with tii_path_matrix_free().
 * n <= TII_MATRIX_MAX. */
TII_API int tii_get_network_path_matrix(tii_t *t, const char *const *hosts, size_t n,
					tii_path_matrix_t **out);
/*
 * The route from hosts[i] to hosts[j]: *guids (borrowed until the matrix is
 * freed) and *len get its switches in route order. Returns 0, TII_E_NOROUTE
 * (then *len is 0) or TII_E_INVAL for i or j out of range. The diagonal
 * (i == j) is an empty route: topod does not list it.
 */
TII_API int tii_path_matrix_route(const tii_path_matrix_t *pm, size_t i, size_t j,
				  const uint64_t **guids, size_t *len);
TII_API void tii_path_matrix_free(tii_path_matrix_t *pm);   /* NULL is a no-op */

/* ---- link sharing inside an allocation (Subramoni 2013, 6.2.1, 8.2.2) ------- */

/* Hosts of the list that share a link just above the leaf level (see
 * docs/protocol.md, "shared"). For these four calls the hosts must be
 * distinct (topod refuses a repeated host: TII_E_INVAL). */
TII_API int tii_get_num_hosts_sharing_links(tii_t *t, const char *const *hosts, size_t n, int *count);

/* Which of them: shares[i] = 1 if hosts[i] shares a link, else 0 (shares
 * must hold n entries; may be NULL); count (may be NULL) gets the total. */
TII_API int tii_get_hosts_sharing_links(tii_t *t, const char *const *hosts, size_t n, int *shares,
					int *count);

/* Hosts of the list that have a leaf switch / distinct leaf switches among
 * them (0 if none); topod reports it exactly (%.17g). */
TII_API int tii_get_avg_hosts_per_leaf_switch(tii_t *t, const char *const *hosts, size_t n,
					      double *avg);

/* Everything "shared" answers, for tools. Host positions index the list. */
struct tii_share_group {
	uint64_t guid;       /* the shared link: the switch ... */
	int port;            /* ... and the port it leaves by */
	size_t nhosts;
	size_t *hosts;       /* positions in the request, ascending */
};
struct tii_link_load {
	uint64_t guid;       /* a directed link: the node and port it leaves by */
	int port;
	uint64_t count;      /* ordered pairs of the list routed over it */
};
typedef struct tii_sharing {
	uint64_t generation;
	size_t n;                 /* hosts in the request */
	size_t nsharing;
	size_t *sharing;          /* positions of the hosts that share a link, ascending */
	size_t ngroups;
	struct tii_share_group *groups;
	size_t nloads;
	struct tii_link_load *loads;
	int leaves;               /* distinct leaf switches */
	double avg_hosts_per_leaf;
	uint64_t pairs_ok, pairs_failed;
} tii_sharing_t;
/* On success *out is new: caller frees it with tii_sharing_free().
 * n <= TII_MATRIX_MAX. */
TII_API int tii_get_link_sharing(tii_t *t, const char *const *hosts, size_t n, tii_sharing_t **out);
TII_API void tii_sharing_free(tii_sharing_t *sh);   /* NULL is a no-op */

/* ---- link loads of a job's communication pattern (`load`, docs/libtii.md) --- */
/*
 * A job is a rank list: rank_hosts[r] names the host of rank r (several
 * ranks may share a host; consecutive equal names are sent as NAME*COUNT,
 * so 16,384 ranks on 4,096 hosts fit one request). Each host sends on its
 * default rail. The loads come from the LFT routes of one generation
 * (docs/protocol.md, `load`). At most TII_RANKS_MAX ranks on
 * TII_MATRIX_MAX hosts (TII_E_TOOMANY).
 */
#define TII_RANKS_MAX TOPO_RANKS_MAX
/* Bytes of one message, wherever a call takes them (a pattern's msg_bytes,
 * a flow's bytes, a schedule's block, a delay matrix's message): up to
 * 2^53, exact in a double; more is TII_E_INVAL. topod refuses a request
 * whose totals (a job's, a link's, a level's) would pass 2^62 bytes
 * (TOPO_BYTES_TOTAL_MAX): TII_E_INVAL, tii_last_message() says so. */
#define TII_MSG_BYTES_MAX TOPO_MSG_BYTES_MAX
#define TII_LOAD_HOPS_MAX 64
#define TII_LOAD_NOLINKS 1u     /* skip the per-link list (summary, levels, hops, max only) */
#define TII_LOAD_LEVEL_NONE 255 /* a switch no host reaches */

struct tii_flow {               /* one entry of an explicit traffic matrix */
	uint32_t src, dst;      /* ranks */
	uint64_t bytes;
};
struct tii_load_link {
	uint64_t guid;          /* a directed link: the node it leaves from ... */
	int port;               /* ... and the port it leaves by */
	int from, to;           /* tiers of its ends: 0 hosts, 1 leaf switches, ... */
	uint64_t msgs, bytes;
	uint64_t head;          /* GUID of the node it leads to (0 in max[]) */
};
struct tii_load_host {          /* a host of the job and its CA's node GUID (to name link ends) */
	char name[TII_NAME_MAX + 1];
	uint64_t guid;
};
struct tii_load_level {         /* a tier class from>to (0>1 host-to-leaf, 1>2 up, 2>1 down, a>a lateral); "level" is its old name */
	int from, to;
	size_t nlinks, nused;
	uint64_t max_msgs, max_bytes, total_msgs, total_bytes;
	int64_t bound_msgs, bound_bytes;   /* the per-cable lower bound on max_* (Prisacari et al. 2013a; docs/cost-model.md), -1 where undefined */
};
struct tii_load_max {           /* a link carrying the largest load (bytes) */
	struct tii_load_link link;
	size_t nbehind;
	char **behind;          /* the job's hosts behind it (below its lower end) */
};
typedef struct tii_load {
	uint64_t generation;
	size_t nranks, nhosts;
	uint64_t flows, msgs, bytes, intra_msgs, intra_bytes, failed_msgs, failed_bytes;
	uint64_t max_msgs, max_bytes;
	int max_hops;
	uint64_t hop_msgs[TII_LOAD_HOPS_MAX + 1], hop_bytes[TII_LOAD_HOPS_MAX + 1]; /* by switches crossed */
	size_t nlevels;                 /* tier classes (old name kept) */
	struct tii_load_level *levels;
	size_t nmax;
	struct tii_load_max *max;
	size_t nlinks;
	struct tii_load_link *links;   /* every loaded link, unless TII_LOAD_NOLINKS */
	size_t nhostnames;
	struct tii_load_host *hostnames; /* the job's hosts, unless TII_LOAD_NOLINKS */
	/* Predicted time of the pattern posted at once (docs/cost-model.md): the
	 * busiest cable's bytes over its data rate plus the longest route's
	 * latency, in seconds; -1 if a loaded cable's rate is unknown. The
	 * bottleneck is that cable (guid 0 if the pattern loads none). Added in
	 * 1.2, at the end: libtii allocates this struct, so older programs are
	 * unaffected. */
	double time_s;
	uint64_t bottleneck_guid;
	int bottleneck_port;
	uint64_t bottleneck_bps;
} tii_load_t;

/* pattern: "alltoall", "allgather", "ring", "shift:K",
 * "stencil2d:X,Y[:periodic]", "stencil3d:X,Y,Z[:periodic]"; msg_bytes per
 * flow (0 means 1; at most TII_MSG_BYTES_MAX). flags: 0 or
 * TII_LOAD_NOLINKS. On success *out is new (tii_load_free). */
TII_API int tii_get_pattern_load(tii_t *t, const char *const *rank_hosts, size_t nranks,
				 const char *pattern, uint64_t msg_bytes, unsigned flags, tii_load_t **out);
/* An explicit traffic matrix: flows[i] sends bytes (at most
 * TII_MSG_BYTES_MAX) from rank src to rank dst (< nranks); a pair listed
 * twice adds up. The request carries one word
 * per flow, so nranks' names plus nflows must fit TII_ARGS_MAX words and
 * TII_REQUEST_MAX bytes (TII_E_TOOMANY). */
TII_API int tii_get_matrix_load(tii_t *t, const char *const *rank_hosts, size_t nranks,
				const struct tii_flow *flows, size_t nflows, unsigned flags, tii_load_t **out);
TII_API void tii_load_free(tii_load_t *l);   /* NULL is a no-op */
/* ---- names, hosts and batches (protocol commands resolve, hosts, hopsbatch, ping) ---- */

/* What a name means to topod ("resolve"). Strings are NUL-terminated. */
struct tii_endpoint {
	char name[TII_NAME_MAX + 1];      /* canonical "host/HCA" (or a GUID) */
	char host[TII_HOSTNAME_MAX + 1];  /* the host it belongs to, "" if none */
	char hca[TII_HOSTNAME_MAX + 1];   /* its HCA label, "" if none */
	uint64_t port_guid, node_guid;
	int port;
	uint16_t lid;    /* the port's base LID */
	uint16_t dlid;   /* the LID routes to this name go to ("lid:N" inside an LMC range) */
	int lmc;
	uint64_t leaf;   /* the switch the port is cabled to, 0 if none */
};
/* TII_E_NOTFOUND if the name names no end port. */
TII_API int tii_resolve(tii_t *t, const char *name, struct tii_endpoint *ep);

/* Every host and its rails ("hosts"), in topod's order, default rail
 * first. */
struct tii_rail {
	char hca[TII_HOSTNAME_MAX + 1];   /* the label ("HCA-2"; the node GUID when the
	                                    * NodeDescription has none) */
	uint64_t port_guid;
	uint16_t lid;
};
struct tii_host {
	char *name;
	size_t nrails;
	struct tii_rail *rails;
};
typedef struct tii_hosts {
	uint64_t generation;
	size_t n;
	struct tii_host *hosts;
} tii_hosts_t;
/* On success *out is new: caller frees it with tii_hosts_free(). */
TII_API int tii_get_hosts(tii_t *t, tii_hosts_t **out);
TII_API void tii_hosts_free(tii_hosts_t *h);   /* NULL is a no-op */

/*
 * Hop counts of n pairs in one request ("hopsbatch"): hops[i] for
 * src[i] -> dst[i]: >= 0, or a negative TII_E_* for that pair alone
 * (TII_E_NOTFOUND, TII_E_NOROUTE, TII_E_INVAL for a name topod refuses).
 * The call returns 0 when the reply was whole, whatever the pairs'
 * results. A source name may not hold ':' except a "lid:" prefix (the
 * protocol's "A:B" form), else TII_E_INVAL before anything is sent.
 */
TII_API int tii_get_hops_batch(tii_t *t, const char *const *src, const char *const *dst, size_t n,
			       int *hops);

/* Liveness of the server ("OK pong"); leaves tii_last_generation(). */
TII_API int tii_ping(tii_t *t);

/* ---- the fabric over time (protocol commands watch, history and diff) ------ */

/* The longest a watch waits (topod's TOPO_WATCH_MAX_MS). */
#define TII_WATCH_MAX_MS TOPO_WATCH_MAX_MS
/*
 * Waits until topod serves a generation other than after_gen on this
 * handle's plane, for at most timeout_ms (0 .. TII_WATCH_MAX_MS): 0 with
 * *new_gen set, or TII_E_TIMEOUT (*new_gen: the generation still served).
 * after_gen 0 before any fabric waits for the first. Schedulers that keep
 * a conflict list call it in a loop instead of polling.
 */
TII_API int tii_watch(tii_t *t, uint64_t after_gen, int timeout_ms, uint64_t *new_gen);
/*
 * The same for an event loop: starts the watch on a connection of its own
 * (the handle's other calls go on meanwhile; one watch at a time) and
 * returns its file descriptor (>= 0, or a negative TII_E_*). When it polls
 * readable, tii_watch_finish() reads the answer (as tii_watch returns) and
 * closes it; tii_watch_cancel() drops a watch unfinished.
 */
TII_API int tii_watch_start(tii_t *t, uint64_t after_gen, int timeout_ms);
TII_API int tii_watch_finish(tii_t *t, uint64_t *new_gen);
TII_API void tii_watch_cancel(tii_t *t);


enum tii_gen_kind { TII_GEN_SERVED = 1, TII_GEN_DELTA, TII_GEN_FULL };

struct tii_generation {
	uint64_t generation, sm_guid, sweep;
	uint64_t snapshot_us, received_us; /* taken by the SM / received by topod, Unix µs */
	char engine[64];                   /* routing engine; "" if unknown */
	uint32_t nodes, switches, cas, links, hosts;
	uint64_t bytes;                    /* what topod keeps of it (0 for the served one) */
	enum tii_gen_kind kind;
};
typedef struct tii_history {
	uint64_t generation; /* served when asked */
	uint64_t bytes;      /* all entries */
	size_t n;
	struct tii_generation *gens; /* oldest first; the served one last */
} tii_history_t;
/* The generations topod keeps. On success *out is new: free it with
 * tii_history_free(). */
TII_API int tii_get_history(tii_t *t, tii_history_t **out);
TII_API void tii_history_free(tii_history_t *h); /* NULL is a no-op */

struct tii_pair {
	char *a, *b;
};
typedef struct tii_diff {
	uint64_t from, to;
	uint64_t links_down, links_up, nodes_gone, nodes_new, ports, lft_switches, lft_entries;
	uint64_t routes_changed; /* ordered host pairs whose route changed */
	uint64_t hosts_changed;  /* hosts at either end of such a pair */
	size_t npairs;           /* with a host list: those pairs (up to 10,000) */
	struct tii_pair *pairs;
	size_t nlines;           /* every other line as topod sent it ("link-down ...", "host H routes=N") */
	char **lines;
} tii_diff_t;
/*
 * What changed from generation `from` to `to` (decimal generations, or
 * "@SECONDS" for the generation served at that Unix time). With hosts
 * (n > 0), only routes between those hosts, each changed pair named: "did
 * any route between my job's hosts change?" is routes_changed != 0.
 * TII_E_NOGENERATION when a generation is not in topod's history
 * (tii_last_message() says which it holds). On success
 * *out is new: free it with tii_diff_free().
 */
TII_API int tii_diff(tii_t *t, const char *from, const char *to, const char *const *hosts, size_t n,
		     tii_diff_t **out);
TII_API void tii_diff_free(tii_diff_t *d); /* NULL is a no-op */

/* ---- placement: host order, node selection, rank mapping ------------------
 * (protocol commands order, pick and map; Subramoni 2013, chapters 5 and 8). Hosts are
 * hostnames of default rails (TII_E_INVAL for another rail or a repeat).
 * Positions returned index the caller's arrays. */

/* Ranks one map request takes (topod's TOPO_RANKS_MAX). */
#define TII_MAP_RANKS_MAX 16384

/* order[i] = the position in hosts[] of the i-th host in hierarchy order
 * (a leaf switch's hosts together, a pod's leaves together). order has n
 * entries. Give ranks out in this order for SLURM_HOSTFILE, MPI hostfiles
 * and rank files, NCCL. */
TII_API int tii_order_hosts(tii_t *t, const char *const *hosts, size_t n, size_t *order);

typedef struct tii_pick_info {
	int sharing_free;   /* 1: no two chosen hosts share a link above the leaf */
	int sharing;        /* hosts that share one (tii_get_num_hosts_sharing_links) */
	int leaves, pods, max_hops;
	uint64_t max_load;  /* all-to-all: most ordered pairs on one directed link */
	/* appended in 1.3: compactness and the prediction, 1 MiB per pair */
	int min_leaves, min_pods;   /* the fewest leaf switches holding want, the fewest pods then */
	int sharing_free_wider;     /* shares, though a sharing-free set on more leaves exists */
	int first_fit;              /* 1: the answer is first-fit's hosts (the pick was predicted slower) */
	double time_s;              /* the answer's predicted all-to-all, seconds; -1 unknown */
	double pick_time_s;         /* topod's compact pick's */
	double first_fit_time_s;    /* first-fit's: the first want free hosts by name */
	/* appended in 1.4: the hosts within the chosen leaves
	 * balanced over the cables above them, and the answer's busiest cable
	 * (its bytes over its rate, the bandwidth term of time_s) against the
	 * injection limit; -1 unknown (or a topod before 1.4) */
	int balanced;               /* 1: hosts traded within their leaves (predicted faster) */
	int swaps;                  /* swaps the balancing made after its fill */
	double bottleneck_s;        /* the answer's busiest cable */
	double limit_s;             /* the injection limit: want - 1 blocks over the slowest host cable */
	double first_fit_bottleneck_s;
	int limit_why;              /* TII_PICK_AT_LIMIT, _UPLINKS, _ROUTES or _NOLIMIT */
	uint64_t bottleneck_guid;   /* the busiest cable: node GUID and the port it leaves by; 0 if none */
	int bottleneck_port;
} tii_pick_info_t;
/* tii_pick_info_t.limit_why: why bottleneck_s is above limit_s */
#define TII_PICK_AT_LIMIT 0  /* within 1.1x of it */
#define TII_PICK_UPLINKS 1   /* a chosen leaf's uplinks cannot carry its hosts' share at the limit */
#define TII_PICK_ROUTES 2    /* the free hosts' routes share cables above the leaves */
#define TII_PICK_NOLIMIT 3   /* unknown: no cable rates, or a topod before 1.4 */
/* Chooses want of the nfree free hosts: one leaf if one holds want (of
 * those, the one with the fewest free hosts), else
 * the fewest leaves, then the fewest pods, then no link sharing above the
 * leaf where those leaves allow; never what topod predicts slower than
 * first-fit (then first-fit's hosts, first_fit = 1). chosen[0..want) gets
 * positions into free_hosts, in hierarchy order. info may be NULL.
 * TII_E_INVAL if want > nfree. Deterministic. */
TII_API int tii_pick_hosts(tii_t *t, const char *const *free_hosts, size_t nfree, size_t want, size_t *chosen,
			   tii_pick_info_t *info);

/* tii_map_info_t.method and .reason (protocol `map`, docs/protocol.md) */
#define TII_MAP_SCOTCH 0
#define TII_MAP_BLOCK 1
#define TII_MAP_RR 2
#define TII_MAP_FASTER 0    /* the answer is predicted faster than block */
#define TII_MAP_SLOWER 1    /* block: Scotch's mapping was predicted slower */
#define TII_MAP_EQUAL 2     /* block: nothing was predicted faster (ties go to block) */
#define TII_MAP_UNKNOWN 3   /* no cable rates: Scotch's mapping unless it has more hop-bytes */
typedef struct tii_map_info {
	int scotch;          /* 1: Scotch's mapping; 0: block (or round-robin, see method) is returned */
	int moved;           /* ranks moved off hosts Scotch filled beyond their slots */
	uint64_t hop_bytes, max_load;              /* of the returned mapping */
	uint64_t block_hop_bytes, block_max_load;  /* ranks in order fill hosts in order */
	uint64_t rr_hop_bytes, rr_max_load;        /* round-robin */
	/* Appended: the predicted time of one phase of the graph (every edge's
	 * traffic at once, bytes per unit of weight, W x bytes / 2 each way) on
	 * the real routes and cable rates (docs/cost-model.md); -1 unknown. The
	 * answer is never predicted slower than block. */
	int method;          /* TII_MAP_SCOTCH, TII_MAP_BLOCK or TII_MAP_RR */
	int reason;          /* TII_MAP_FASTER, _SLOWER, _EQUAL or _UNKNOWN */
	int swaps;           /* moves kept by the swap pass after Scotch */
	uint64_t bytes;      /* per unit of edge weight the times are for (1 MiB) */
	double time_s, block_time_s, rr_time_s, scotch_time_s;
	uint64_t bottleneck_guid;   /* the answer's busiest cable: node GUID and port it leaves by, */
	int bottleneck_port;        /* 0 and 0 if none */
	uint64_t bottleneck_bps;    /* its data rate, 0 if none or unknown */
} tii_map_info_t;
/* Maps a communication graph of nranks vertices onto hosts[i] with slots[i]
 * ranks each (slots NULL: 1 each): Scotch's mapping refined against the
 * busiest cable, block or round-robin, whichever topod predicts fastest,
 * never one predicted slower than block (ties go to block). The graph is in
 * CSR form as METIS and Scotch take it: the neighbours of rank r are
 * adjncy[xadj[r] .. xadj[r+1]), with weights adjwgt (NULL: 1), each edge
 * normally listed from both ends. rank_host[r] gets the position in hosts[]
 * of rank r's host. TII_E_INVAL if the slots are too few or a neighbour is
 * out of range. info may be NULL. nranks <= 16,384; the graph must fit one
 * request (256 KiB of text, about 30,000 edges): else TII_E_TOOMANY. */
TII_API int tii_map_graph(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, size_t nranks,
			  const int *xadj, const int *adjncy, const int *adjwgt, size_t *rank_host, tii_map_info_t *info);
/* The same for a 7-point stencil of dims[0] x dims[1] x dims[2] ranks (rank
 * x + X*(y + Y*z)), sent as its dimensions. */
TII_API int tii_map_stencil(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, const int dims[3],
			    int periodic, size_t *rank_host, tii_map_info_t *info);

/*
 * For MPI libraries (MPI_Dist_graph_create with reorder = 1): rank_hosts[p]
 * is the host process p runs on (repeated for every process of a host);
 * the graph is given exactly as MPI_Dist_graph_create takes it: n sources,
 * source i = sources[i] has degrees[i] edges to the next entries of
 * destinations[] with weights[] (NULL for MPI_UNWEIGHTED). On success
 * newrank[p] is the rank process p should take: MPI_Comm_split(comm, 0,
 * newrank[p], &newcomm) gives a communicator in which graph vertex v runs
 * where the mapping put it. The permutation only moves ranks between
 * processes; every host keeps its number of processes. info may be NULL.
 */
TII_API int tii_reorder_ranks(tii_t *t, const char *const *rank_hosts, int nranks, int n, const int *sources,
			      const int *degrees, const int *destinations, const int *weights, int *newrank,
			      tii_map_info_t *info);

/*
 * ABI: tii_pick_info_t and tii_map_info_t grew in 1.3, and the caller owns
 * them. A program built against 1.2 passes the 1.2 size to the four calls
 * above, which fill only the 1.2 fields; this header sends programs built
 * against it to the *_13 entry points, which fill the whole structs. Call
 * the names above as always.
 */
TII_API int tii_pick_hosts_13(tii_t *t, const char *const *free_hosts, size_t nfree, size_t want, size_t *chosen,
			      tii_pick_info_t *info);
TII_API int tii_map_graph_13(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, size_t nranks,
			     const int *xadj, const int *adjncy, const int *adjwgt, size_t *rank_host,
			     tii_map_info_t *info);
TII_API int tii_map_stencil_13(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, const int dims[3],
			       int periodic, size_t *rank_host, tii_map_info_t *info);
TII_API int tii_reorder_ranks_13(tii_t *t, const char *const *rank_hosts, int nranks, int n, const int *sources,
				 const int *degrees, const int *destinations, const int *weights, int *newrank,
				 tii_map_info_t *info);
/* 1.4: tii_pick_info_t grew again; tii_pick_hosts_13 fills its 1.3 fields. */
TII_API int tii_pick_hosts_14(tii_t *t, const char *const *free_hosts, size_t nfree, size_t want, size_t *chosen,
			      tii_pick_info_t *info);
#define tii_pick_hosts tii_pick_hosts_14
#define tii_map_graph tii_map_graph_13
#define tii_map_stencil tii_map_stencil_13
#define tii_reorder_ranks tii_reorder_ranks_13
/* For an allocation that exists (protocol `pick trade`, since 1.4):
 * its hosts balanced on its own leaves, some traded for free hosts of those
 * leaves when topod predicts its all-to-all faster. out[0..nalloc) gets the
 * allocation after the trade in hierarchy order: i < nalloc is alloc[i],
 * else free_hosts[i - nalloc]; *trades (may be NULL) how many were traded.
 * info (may be NULL): the answer's figures; time_s and bottleneck_s are the
 * answer's, first_fit_time_s and first_fit_bottleneck_s the allocation's own
 * (first_fit_time_s / time_s is the predicted gain), pick_time_s = time_s,
 * min_leaves, min_pods, sharing_free_wider and first_fit 0. nfree may be 0.
 * A host in both lists: TII_E_INVAL from topod (ERR DUPLICATE). */
TII_API int tii_pick_trade(tii_t *t, const char *const *alloc, size_t nalloc, const char *const *free_hosts,
			   size_t nfree, size_t *out, size_t *trades, tii_pick_info_t *info);
/* tii_pick_hosts judged by the pattern `pattern` (1.4, protocol `pick
 * pattern=P`: a spec `load` takes, e.g. "ring", "stencil2d:8,8", "shift:1";
 * NULL: "alltoall"): rank i on chosen[i]'s host. info's times are the
 * pattern's; limit_s -1 and limit_why TII_PICK_NOLIMIT for another pattern
 * than the all-to-all. A spec with blanks or over 64 bytes: TII_E_INVAL
 * before anything is sent; one topod refuses (unknown, or not a pattern of
 * want ranks): TII_E_SERVER, tii_last_message says why. */
TII_API int tii_pick_hosts_pattern(tii_t *t, const char *pattern, const char *const *free_hosts, size_t nfree,
				   size_t want, size_t *chosen, tii_pick_info_t *info);
/* The rule on leaves (protocol `pick leaves=`, since 1.5): a pick on more
 * leaves than the fewest, when topod predicts it faster. */
typedef struct tii_pick_wider {
	int widened;          /* 1: the answer spans more leaves than min_leaves, or more pods than
			       * min_pods (ANY, or AUTO when the fewest-leaves pick was predicted
			       * slower than random picks) */
	int wider_leaves;     /* leaves of the fastest wider pick predicted faster than the
			       * fewest-leaves answer (the answer's when widened); 0 none */
	double wider_time_s;  /* its predicted time; -1 none (or a topod without leaves=) */
} tii_pick_wider_t;
#define TII_LEAVES_FEWEST 0   /* the promise of fewest leaves, pods, then sharing hosts, whatever it
			       * costs (first-fit's hosts only where they keep it too) */
#define TII_LEAVES_ANY 1      /* more leaves whenever predicted faster: topod's default since 1.6,
			       * and so every other pick call's (they send no rule) */
#define TII_LEAVES_AUTO 2     /* 1.6: fewest, unless predicted slower than random picks from the
			       * free list */
/* 1.8: what this handle's picks are judged by (protocol `pick run=`):
 * TII_PICK_RUN_BOUND, the all-to-all posted at once (topod's
 * default, and what every pick call asks until this is called); ROUTE,
 * topod's route all-to-all as tii_set_schedule_run(t, TII_SCHED_WINDOW_AUTO,
 * -1) schedules it (libtopocoll's, its fallback to XOR included); XOR,
 * the MPIs' pairwise steps; TII_PICK_RUN_NATIVE + TII_NATIVE_*, that
 * MPI's own Alltoall; all at the block size of tii_set_schedule_advice
 * (sent as the pick's bytes= with a judged run; 0: topod's 1 MiB). Every time in tii_pick_info_t (time_s, pick_time_s,
 * first_fit_time_s, random_time_s) is then that run's predicted time, and
 * the picks' rules hold by it; the bottleneck and the limit stay the
 * bound's. A judged pick costs topod seconds (it simulates about 16
 * schedules) and takes at most 256 wanted hosts (TII_E_SERVER above), the
 * all-to-all only (a pattern with another run: TII_E_SERVER). The reply
 * must say it was judged so (else TII_E_PROTO). A topod before 1.8
 * refuses run= (TII_E_SERVER): BOUND sends nothing. TII_E_INVAL for a
 * NULL handle or another value. */
#define TII_PICK_RUN_BOUND 0
#define TII_PICK_RUN_ROUTE 1
#define TII_PICK_RUN_XOR 2
#define TII_PICK_RUN_NATIVE 3   /* + TII_NATIVE_* */
TII_API int tii_set_pick_run(tii_t *t, int run);

/* tii_pick_hosts_pattern (pattern may be NULL) with the rule on leaves
 * any_leaves (TII_LEAVES_*). FEWEST keeps the fewest leaves and pods and
 * sets wider (may be NULL) when the answer's leaves cannot carry its
 * all-to-all at the injection limit and more leaves are predicted faster:
 * what the promise costs. ANY (the rule of tii_pick_hosts and
 * tii_pick_hosts_pattern too, from a topod 1.6; FEWEST from one before)
 * answers that wider pick (wider->widened 1, info->pick_time_s the
 * fewest-leaves pick's), never one predicted slower than first-fit or than
 * the mean of random picks from the free list. AUTO is FEWEST unless the
 * fewest-leaves pick is predicted slower than random picks; then ANY.
 * TII_E_INVAL for another value. */
TII_API int tii_pick_hosts_leaves(tii_t *t, const char *pattern, int any_leaves, const char *const *free_hosts,
				  size_t nfree, size_t want, size_t *chosen, tii_pick_info_t *info,
				  tii_pick_wider_t *wider);

/* ---- all-to-all schedules (`schedule`, docs/libtii.md) ----------------------- */

/* Algorithms: the MPI libraries' default (XOR for powers of two, else
 * pairwise (r+i) mod p), TACS1/TACS2 (Subramoni 2013), the bandwidth-optimal
 * exchange on fat trees (Prisacari et al. 2013a), the kPrefix allgather (Kumar
 * and Kale 2004); docs/bibliography.md has the references. */
#define TII_SCHED_XOR 0
#define TII_SCHED_TACS1 1
#define TII_SCHED_TACS2 2
#define TII_SCHED_OPT 3
#define TII_SCHED_ALLGATHER 4
#define TII_SCHED_ROUTE 5     /* 1.3: route-aware, aiming at the link-load bound (docs/cost-model.md) */
/* 1.5: allgathers beside kPrefix (TII_SCHED_ALLGATHER), docs/protocol.md:
 * Kumar and Kalé 2004's kShift and a ring, both in the fabric's order, the
 * MPIs' own ring in rank order (their baseline), and the fastest predicted
 * of the three beside kPrefix (the answer's algo says which). */
#define TII_SCHED_KSHIFT 6
#define TII_SCHED_AGRING 7
#define TII_SCHED_RING 8
#define TII_SCHED_AGBEST 9      /* a request only: algo is the one chosen */
#define TII_SCHED_RANKS_MAX 4096  /* ranks of one schedule with its flows */
#define TII_SCHED_LEVELS 8

struct tii_schedule_params {
	int algo;         /* TII_SCHED_* */
	int conflicts;    /* TACS: flows a link may carry beyond the first (Subramoni 2013: 1) */
	double sparsity;  /* TACS: below this many job hosts per leaf, use XOR (0: never) */
	int k;            /* ALLGATHER: partition size, a power of two dividing the ranks (0: auto);
	                   * KSHIFT: 1..ranks (0: 8); AGBEST: both */
};

struct tii_schedule_step {
	int flows;            /* transfers in the step */
	int maxload;          /* most flows on one directed link (LFT routes) */
	int conflicts;        /* directed links with more than one flow */
	int fabric_conflicts; /* of those, links between two switches */
};

typedef struct tii_schedule {
	uint64_t generation;
	int algo;             /* the one run: TACS falls back to XOR on sparse jobs */
	int requested;
	int fallback;         /* 1 if algo != requested: the sparsity rule, or predicted slower */
	int nranks, nsteps;
	int multi;            /* 1 if a rank sends or receives twice in a step (TACS2):
	                       * run such a step with MPI_Isend/MPI_Irecv */
	int host_steps, extra_steps; /* TACS: host-level steps, TACS1's steps beyond H-1 */
	/* Flows of step i: src[f] -> dst[f] for f in [step_off[i], step_off[i+1]);
	 * self blocks are not listed (a local copy). blk: ALLGATHER only, the
	 * origin rank of the block forwarded (else NULL). */
	int *step_off, *src, *dst, *blk;
	struct tii_schedule_step *steps;  /* [nsteps] */
	/* OPT: the busiest link per step and tier 1..nlevels (host cable, leaf
	 * uplink, ...; tiers count from the hosts, docs/protocol.md "Levels, one
	 * vocabulary"; the fields keep their old names):
	 * level_max[i * nlevels + l - 1]; the per-cable bound (Prisacari et al.
	 * 2013a) per tier: level_bound[l]. */
	int nlevels;
	int *level_max;
	int level_bound[TII_SCHED_LEVELS];
	/* 1.2, at the end (libtii allocates this struct): the predicted times,
	 * in seconds, for blocks of `bytes` (docs/cost-model.md), -1 where
	 * unknown: this schedule's, XOR's on the same ranks, and the bound of
	 * any schedule (the all-to-all posted at once). slower: topod answered
	 * XOR because it predicts the requested algorithm slower (fallback is
	 * then 1 too). */
	uint64_t bytes;
	double time_s, xor_time_s, bound_s;
	int slower;
	/* At the end: the form topod answered in (TII_SCHED_FORM_*); hosts form:
	 * the job's hosts and host steps that libtii expanded into the flows above. */
	int form;
	int nhosts, nhsteps;
	/* 1.5, allgathers (algo TII_SCHED_ALLGATHER .. TII_SCHED_RING): the
	 * baseline ring's predicted time (-1 unknown; bound_s is then the
	 * host-cable bound, (ranks - ranks on the host) blocks through the
	 * busiest host cable; slower: topod answered the ring), and the
	 * variants topod considered (AGBEST: kPrefix, kShift and the
	 * route-ordered ring; else the one asked for): algo, state
	 * (TII_SCHED_OFFERED: predicted no slower than the ring;
	 * TII_SCHED_SLOWER; TII_SCHED_NOTAPPLICABLE, e.g. kPrefix's k does not
	 * divide the ranks) and predicted time (-1 unknown). A topod before
	 * 1.5 answering kPrefix sends neither: -1 and no variants. */
	double ring_time_s;
	int nvariants;
	struct tii_schedule_variant {
		int algo, state;
		double time_s;
	} variants[3];
	/* 1.7, every message size (tii_set_schedule_run): the steps a rank
	 * keeps in flight that time_s is predicted for (1: one after the
	 * other; a topod before 1.7 says nothing: 1). With a native model
	 * asked: native (TII_NATIVE_*, else -1), what the MPI's own Alltoall
	 * runs at the block size (native_algo: "linear", "pair", "shift",
	 * "bruck", "scatter:T"), its predicted time (-1 unknown), and
	 * native_faster: topod's rule keeps the MPI's own (fallback is then 1,
	 * the steps those asked for): run MPI_Alltoall. */
	int window;
	int native;
	char native_algo[16];
	double native_time_s;
	int native_faster;
} tii_schedule_t;
#define TII_SCHED_OFFERED 0
#define TII_SCHED_SLOWER 1
#define TII_SCHED_NOTAPPLICABLE 2

/* What this handle's schedule requests ask (1.2): the block size the
 * times are predicted for (0: topod's default, 1 MiB), and whether topod
 * may answer XOR in place of an algorithm it predicts slower (advice = 1,
 * the default) or must answer the algorithm asked for (0, with the same
 * predictions). TII_E_INVAL for a NULL handle or bytes above
 * TII_MSG_BYTES_MAX (2^53). */
TII_API int tii_set_schedule_advice(tii_t *t, uint64_t bytes, int advice);

/* 1.7: how this handle's schedules are to run, for topod's predictions
 * (docs/cost-model.md "Every message size"): window, the steps a rank
 * keeps in flight (a sliding window of MPI_Isend/MPI_Irecv): 1..TOPO_SCHED_WINDOW_MAX, or
 * TII_SCHED_WINDOW_AUTO for the fastest topod predicts (the answer's
 * window says which); native, the MPI whose own MPI_Alltoall is the
 * baseline (TII_NATIVE_*; -1: XOR, as before). TII_E_INVAL otherwise. */
#define TII_SCHED_WINDOW_AUTO 0
#define TII_NATIVE_SMPI_OMPI 0   /* SimGrid SMPI 3.32's Open MPI selector */
#define TII_NATIVE_SMPI_MPICH 1  /* SMPI 3.32's MPICH selector */
#define TII_NATIVE_OMPI 2        /* Open MPI 4.1's coll/tuned fixed rules */
#define TII_NATIVE_MPICH 3       /* MPICH 4.0's */
TII_API int tii_set_schedule_run(tii_t *t, int window, int native);

/* The schedule for ranks 0..n-1, rank r on host rank_hosts[r] (several ranks
 * may share a host; 2 <= n <= TII_SCHED_RANKS_MAX). TII_E_SERVER with
 * tii_last_message() when the algorithm does not apply (OPT on an uneven
 * job, ALLGATHER when k does not divide n). On success *out is new: free it
 * with tii_schedule_free(). */
TII_API int tii_get_schedule(tii_t *t, const struct tii_schedule_params *p, const char *const *rank_hosts,
			     size_t n, tii_schedule_t **out);
TII_API void tii_schedule_free(tii_schedule_t *s);  /* NULL is a no-op */
/* Step as partner arrays ([nranks] each, -1 = idle): sendto[r] / recvfrom[r]
 * for MPI_Sendrecv. TII_E_INVAL for a bad step or a step where a rank has two
 * partners (multi). */
TII_API int tii_schedule_partners(const tii_schedule_t *s, int step, int *sendto, int *recvfrom);
/* "xor", "tacs1", ... or NULL. */
TII_API const char *tii_schedule_algo_name(int algo);

/* How this handle's schedule replies travel. TII_SCHED_FORM_HOSTS (the
 * default): topod sends the schedule over hosts once (steps of host pairs,
 * per-step figures) and libtii expands it into the rank-level flows by the
 * rule in docs/protocol.md: the same tii_schedule_t, flows, figures and
 * times as the rank-level reply, in a reply ranks-per-host^2 times smaller
 * (a 4,096-rank job on 256 hosts: about 600 KB instead of 159 MB). A topod
 * that knows no form=hosts is asked again in rank form. OPT always travels
 * in rank form. TII_SCHED_FORM_RANKS: every rank flow on the wire (topod
 * refuses more than TOPO_SCHED_RANK_FLOWS_MAX with TOOBIG). TII_E_INVAL for
 * another value or a NULL handle. */
#define TII_SCHED_FORM_RANKS 0
#define TII_SCHED_FORM_HOSTS 1
TII_API int tii_set_schedule_form(tii_t *t, int form);

/* ---- a SimGrid platform (what-if simulation) ----------------------------- */

#define TII_SIMGRID_HOSTS_MAX TOPO_SIMGRID_HOSTS_MAX

/* The SimGrid platform (XML 4.1, SimGrid 3.32) of hosts[0..n), 1 <= n <=
 * TII_SIMGRID_HOSTS_MAX, distinct (TII_E_INVAL otherwise, as for a host's
 * non-default rail): one host per name, one link per direction of every
 * cable their routes use at the cable's data rate, and for every ordered
 * pair the route the switches' LFTs really take (docs/protocol.md `simgrid`,
 * docs/performance.md for the model and the settings it carries). Run it
 * with `smpirun -platform FILE`. TII_E_NOROUTE when a route fails or crosses
 * a cable of unknown rate (tii_last_message() names the pair). On success
 * *xml is a new NUL-terminated document (free() it) of *len bytes (len may
 * be NULL). A 256-host platform is tens of MB: raise the timeout and the
 * reply limit for large jobs. */
TII_API int tii_get_simgrid_platform(tii_t *t, const char *const *hosts, size_t n, char **xml, size_t *len);

/* ---- the inventory (protocol commands show and links) -------------------- */

/* Longest node name in show/links replies: "host/HCA" or a switch's
 * NodeDescription (64 bytes once unescaped). */
#define TII_NODE_NAME_MAX (2 * TII_HOSTNAME_MAX + 1)
/* HCAs show lists for one host, and cables one links reply lists. */
#define TII_SHOW_NODES_MAX TOPO_SHOW_NODES_MAX
#define TII_LINKS_MAX TOPO_LINKS_MAX

/* One port and its neighbour, in iblinkinfo's words: state "Down" "Init"
 * "Armed" "Active", width "1X" "2X" "4X" "8X" "12X", speed "SDR" .. "HDR";
 * "?" where the fabric does not say. */
struct tii_port_info {
	int port;
	uint64_t port_guid;
	uint16_t lid;                 /* a switch's: its port 0's */
	int lmc;
	char state[8], width[4], speed[4];
	uint64_t rate_bps;            /* data rate of the port, 0 if unknown */
	int has_peer;                 /* 0: nothing cabled, the peer_* fields are empty */
	uint64_t peer_node, peer_guid;
	int peer_port;
	char peer_type[8], peer_state[8];
	char peer_name[TII_NODE_NAME_MAX + 1];
};
struct tii_node_info {
	uint64_t guid, sysimg_guid;
	char type[8];                 /* "CA", "Switch", "Router" */
	char name[TII_NODE_NAME_MAX + 1];   /* "host/HCA" or the switch's description */
	char desc[TII_HOSTNAME_MAX + 1];    /* the NodeDescription */
	int nports;                   /* physical ports; ports[] lists the present ones */
	size_t nlisted;
	struct tii_port_info *ports;
};
typedef struct tii_show {
	uint64_t generation;
	char name[TII_NODE_NAME_MAX + 1];
	char kind[8];                 /* "host", "ca", "switch", "router" */
	char plane[TOPO_PLANE_NAME_MAX + 1];
	char host[TII_HOSTNAME_MAX + 1];    /* "" for a switch */
	uint64_t leaf;                /* the default rail's (or that HCA's) leaf switch, 0 if none */
	char leaf_name[TII_NODE_NAME_MAX + 1];
	uint64_t leaf_cluster, pod;   /* as tii_connected_switch_cluster_at_depth gives them, 0 if none */
	size_t nnodes;
	struct tii_node_info *nodes;
	char leaf_cluster_name[TII_NODE_NAME_MAX + 1], pod_name[TII_NODE_NAME_MAX + 1];  /* as tree names them, "" if none */
} tii_show_t;
/* A host (all of its HCAs), an HCA or a switch (a name of docs/protocol.md,
 * or a switch's description or its first word). TII_E_NOTFOUND. On success
 * *out is new: free it with tii_show_free(). */
TII_API int tii_show(tii_t *t, const char *name, tii_show_t **out);
TII_API void tii_show_free(tii_show_t *s);   /* NULL is a no-op */

/* One cable, from its end with the lower node GUID (end 0). */
struct tii_link {
	uint64_t node[2];
	int port[2];
	char state[8];                /* the lesser of both ends' */
	char width[4], speed[4];
	uint64_t rate_bps;            /* the lesser of both ends, 0 if unknown */
	char type[2][8], end_state[2][8];
	char name[2][TII_NODE_NAME_MAX + 1];
};
typedef struct tii_links {
	uint64_t generation;
	size_t total;                 /* cables of the fabric */
	size_t n;                     /* those the filters passed, listed */
	struct tii_link *links;
} tii_links_t;
/* Every cable once (iblinkinfo lists it from both ends). name: NULL, or a
 * substring of either end's name, description or 0x GUID; state: NULL, or
 * "down" (an end below Init), "init", "armed", "active", "notactive", "up".
 * On success *out is new: free it with tii_links_free(). */
TII_API int tii_get_links(tii_t *t, const char *name, const char *state, tii_links_t **out);
TII_API void tii_links_free(tii_links_t *l);   /* NULL is a no-op */

/* ---- the delay matrix (Subramoni 2013, chapter 4: hops and link rates) ---- */

/* Largest message of a delay matrix (TII_MSG_BYTES_MAX, 2^53), and the
 * largest time an entry can take: 2^53 bytes over a 1x SDR cable (2 Gb/s)
 * plus any route's latency is ~3.6e16 ns; a larger entry is TII_E_PROTO. */
#define TII_DELAY_BYTES_MAX TII_MSG_BYTES_MAX
#define TII_DELAY_NS_MAX 40000000000000000ll

/*
 * For every ordered pair of the n hosts, in one request: matrix[i * n + j] =
 * the predicted time in nanoseconds of one message of bytes bytes from
 * hosts[i] to hosts[j] alone on its LFT route: the latency of its cables and
 * switches plus bytes over the slowest cable of the route (the one cost
 * model, docs/cost-model.md); 0 on the diagonal, UINT64_MAX where the route
 * fails. Order node leaders by it for a topology- and speed-aware Bcast.
 * matrix must hold n * n entries; n <= TII_MATRIX_MAX; bytes <=
 * TII_DELAY_BYTES_MAX (TII_E_INVAL). TII_E_NOROUTE (bytes > 0) when a route
 * crosses a cable whose rate the fabric does not give (tii_last_message()
 * names it); bytes = 0 gives latencies only. On error the matrix may have
 * been partly written. A 4,096-host matrix is ~200 MB of text: raise the
 * reply limit for it.
 */
TII_API int tii_get_delay_matrix(tii_t *t, const char *const *hosts, size_t n, uint64_t bytes, uint64_t *matrix);

/* ---- the whole fabric as one SimGrid platform ------------------------------ */

#define TII_SIMGRID_ALL_HOSTS_MAX TOPO_SIMGRID_ALL_HOSTS_MAX
#define TII_SIMGRID_ALL_BYTES_MAX TOPO_SIMGRID_ALL_BYTES_MAX

/*
 * The SimGrid platform of every host of the fabric whose default port is up
 * (`simgrid all`, docs/protocol.md): the same hosts, links, rates and LFT
 * routes as tii_get_simgrid_platform() would give for all of them, written
 * as one zone per leaf switch so that it grows as leaves x hosts, not
 * hosts^2. TII_E_TOOMANY past TII_SIMGRID_ALL_HOSTS_MAX hosts or
 * TII_SIMGRID_ALL_BYTES_MAX bytes (tii_last_message() says which),
 * TII_E_NOROUTE as tii_get_simgrid_platform(). On success *xml is a new
 * NUL-terminated document (free() it) of *len bytes and *hosts its host
 * count (len, hosts may be NULL). Large fabrics give hundreds of MB: raise
 * tii_set_max_reply_bytes() (to TII_SIMGRID_ALL_BYTES_MAX + 4096 for any
 * answer) and the timeout.
 */
TII_API int tii_get_simgrid_fabric(tii_t *t, char **xml, size_t *len, size_t *hosts);

#ifdef __cplusplus
}
#endif

#endif
