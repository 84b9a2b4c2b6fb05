/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * snapshot.h - the fabric snapshot: in-memory model and binary codec.
 *
 * This is the one definition of the fabric that every component shares: the
 * OpenSM plugin and the SMP collector build it, topod decodes, validates and
 * serves it. The codec in snapshot.c is compiled into all of them.
 *
 * Model
 *   nodes[]   every node, sorted by node GUID after snap_canonicalize().
 *   ports[]   for node n, ports[n.port0 .. n.port0 + n.nports] are its ports
 *             0..nports; port 0 exists for switches (management port, it
 *             carries the switch's LID) and is "absent" on CAs and routers.
 *   links     are stored in the ports: peer_node/peer_port, both directions.
 *   n.lft     for switch n, entries 0 .. n.lft_len-1 are its linear
 *             forwarding table: out-port per destination LID, with
 *             SNAP_LFT_NONE (0xFF, the IB "no path" value) kept distinct
 *             from port 0, which means "this switch itself". NULL when
 *             lft_len is 0. Read with snap_lft_get() and snap_lft_read().
 *             A table is held in chunks of SNAP_LFT_CHUNK entries, counted
 *             and shared, copy-on-write, between snapshots: snap_dup()
 *             copies no table, and a writer calls snap_lft_own() for the
 *             entries it changes, which copies the one chunk holding them
 *             if another table still reads it. A generation derived from
 *             another therefore costs the chunks it changed (a reroute's
 *             blocks are spread over most switches' tables: whole tables
 *             would cost half of them), while readers of either see
 *             immutable tables, and decoded tables are copied out of the
 *             received bytes, which are not kept.
 *
 * Error convention: functions returning int return 0 on success or -1 with a
 * human-readable reason in err[SNAP_ERR_LEN]. Nothing here prints or exits.
 */
#ifndef TOPOD_SNAPSHOT_H
#define TOPOD_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>

#define SNAP_MAGIC "TOPOSNAP"
#define SNAP_MAGIC_LEN 8
#define SNAP_VERSION 1
#define SNAP_HEADER_LEN 64
#define SNAP_ERR_LEN 256

/* Limits on decoded input. They are far above any real fabric, but they keep a
 * hostile header from making us allocate gigabytes or overflow a product. */
#define SNAP_MAX_NODES (1u << 20)      /* 1M nodes: ~16x the largest IB fabric built */
#define SNAP_MAX_PORTS_PER_NODE 255    /* NumPorts is an 8-bit field */
#define SNAP_MAX_LID 0xBFFF            /* unicast LIDs are 1..0xBFFF */
#define SNAP_MAX_PAYLOAD ((uint64_t)8 << 30)  /* 8 GiB: 64k switches x 48k LIDs needs ~3 GiB */
#define SNAP_DESC_LEN 64               /* NodeDescription is 64 bytes on the wire */
#define SNAP_ENGINE_LEN 63

#define SNAP_NONE UINT32_MAX           /* no peer node */
#define SNAP_LFT_NONE 0xFF             /* IB LFT "no path" (OSM_NO_PATH) */

enum snap_node_type {
	SNAP_NODE_CA = 1,
	SNAP_NODE_SWITCH = 2,
	SNAP_NODE_ROUTER = 3,
};

/* PortInfo:PortState values, as on the wire. */
enum snap_port_state {
	SNAP_PORT_NOSTATE = 0,
	SNAP_PORT_DOWN = 1,
	SNAP_PORT_INIT = 2,
	SNAP_PORT_ARMED = 3,
	SNAP_PORT_ACTIVE = 4,
};

struct snap_port {
	uint64_t guid;      /* port GUID; for switch ports 1..n the switch's port 0 GUID */
	uint32_t peer_node; /* index into nodes[], or SNAP_NONE */
	uint16_t lid;       /* base LID; 0 if none (switch external ports carry none) */
	uint8_t present;    /* 0: the slot exists only to keep indexing simple */
	uint8_t peer_port;
	uint8_t lmc;
	uint8_t state;      /* enum snap_port_state */
	uint8_t width;      /* PortInfo:LinkWidthActive (1=1x 2=4x 4=8x 8=12x 16=2x) */
	uint8_t speed;      /* PortInfo:LinkSpeedActive (1=SDR 2=DDR 4=QDR) */
	uint8_t espeed;     /* PortInfo:LinkSpeedExtActive (0=none 1=FDR 2=EDR 4=HDR) */
};

/* A switch's forwarding table, in chunks: entry l is
 * chunk[l >> SNAP_LFT_CHUNK_SHIFT][l & (SNAP_LFT_CHUNK - 1)]. 512 entries:
 * a reroute that changes 0.5 % of the 64-entry blocks at k=56 copies 4 %
 * of the chunks (whole tables: 55 %), while the pointers cost 1.6 % of the
 * entries. A chunk past the table's end is filled with SNAP_LFT_NONE. */
#define SNAP_LFT_CHUNK_SHIFT 9
#define SNAP_LFT_CHUNK (1u << SNAP_LFT_CHUNK_SHIFT)
struct snap_lft {
	_Atomic unsigned refs; /* nodes (of any snapshot) that hold it; lft.c's */
	uint32_t nchunks;
	const uint8_t *chunk[];
};

struct snap_node {
	uint64_t guid;
	uint64_t sysimg_guid;
	const struct snap_lft *lft; /* switches: the LFT, LIDs 0..lft_len-1; NULL if
				     * empty. Shared: written only through snap_lft_own() */
	uint32_t port0;     /* index of this node's port 0 in ports[] */
	uint32_t lft_len;   /* switches: number of LFT entries */
	uint8_t type;       /* enum snap_node_type */
	uint8_t nports;     /* physical ports, numbered 1..nports */
	char desc[SNAP_DESC_LEN + 1]; /* NUL-terminated; may hold any byte but NUL */
};

/* Entry l of node n's table; SNAP_LFT_NONE past its end. */
static inline uint8_t snap_lft_get(const struct snap_node *n, uint32_t l)
{
	return l < n->lft_len ? n->lft->chunk[l >> SNAP_LFT_CHUNK_SHIFT][l & (SNAP_LFT_CHUNK - 1)]
			      : SNAP_LFT_NONE;
}

/* Entries l .. l+*run-1 of node n's table, contiguous (the rest of l's
 * chunk, at most the table's end); NULL with *run 0 past the end. */
static inline const uint8_t *snap_lft_span(const struct snap_node *n, uint32_t l, uint32_t *run)
{
	if (l >= n->lft_len) {
		*run = 0;
		return NULL;
	}
	uint32_t in = l & (SNAP_LFT_CHUNK - 1), left = n->lft_len - l;
	*run = SNAP_LFT_CHUNK - in < left ? SNAP_LFT_CHUNK - in : left;
	return n->lft->chunk[l >> SNAP_LFT_CHUNK_SHIFT] + in;
}

/* Asks for the cache line holding entry l of node n's table (none past
 * its end): loops that visit scattered blocks of many tables (a delta's)
 * ask a few blocks ahead, each block a line no cache holds. */
static inline void snap_lft_prefetch(const struct snap_node *n, uint32_t l)
{
	if (l < n->lft_len)
		__builtin_prefetch(n->lft->chunk[l >> SNAP_LFT_CHUNK_SHIFT] + (l & (SNAP_LFT_CHUNK - 1)));
}

/* Entries l0 .. l0+cnt-1 of node n's table into dst, SNAP_LFT_NONE past
 * its end. */
void snap_lft_read(const struct snap_node *n, uint32_t l0, uint32_t cnt, uint8_t *dst);
/* Entries 0 .. n-1 of a block (n <= 64), bit l for entry l. */
static inline uint64_t snap_lft_first(uint32_t n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}
/* The entries of a block of n (<= 64) in which b differs from a (NULL:
 * every entry), bit l for entry l. A reroute rewrites a few entries of
 * each block it touches (4.8 of 64 on average in a real k=56 cable
 * fault): a delta's record names those alone, and the route cover tests
 * those alone. */
uint64_t snap_lft_diff_mask(const uint8_t *a, const uint8_t *b, uint32_t n);

struct snap {
	/* header fields */
	uint64_t generation; /* assigned by the producer, increasing per producer run */
	uint64_t sm_guid;    /* port GUID of the master SM (0 when unknown) */
	uint64_t sweep;      /* producer's sweep/routing counter */
	uint64_t timestamp;  /* Unix time in microseconds when the copy was taken */
	char engine[SNAP_ENGINE_LEN + 1]; /* routing engine name, e.g. "ftree" */

	uint32_t nnodes;
	uint32_t nports;     /* total port slots: sum over nodes of (nports + 1) */
	uint64_t nlft;       /* total LFT bytes (sum of lft_len) */
	uint32_t max_lid;    /* highest LID assigned to any port (incl. LMC range) */
	struct snap_node *nodes;
	struct snap_port *ports;
};

/* ---- building ---------------------------------------------------------- */

/* An empty snapshot; caller frees with snap_free(). NULL on ENOMEM. */
struct snap *snap_new(void);
void snap_free(struct snap *s);
/* A copy, for changing a snapshot others still read: nodes and ports are
 * copied, the tables shared until snap_lft_own(). NULL on ENOMEM. Any
 * thread may free either, in any order. */
struct snap *snap_dup(const struct snap *s);
/* Entries l0 .. l0+cnt-1 of node's table, writable and s's own, all in
 * one chunk (l0 / SNAP_LFT_CHUNK == (l0 + cnt - 1) / SNAP_LFT_CHUNK, as
 * every SNAP_DELTA_BLOCK block is): the table and that chunk are copied
 * first if anything else reads them (a route index built on s then reads
 * the old ones: route.h, swlft). NULL if out of range, or on ENOMEM. */
uint8_t *snap_lft_own(struct snap *s, uint32_t node, uint32_t l0, uint32_t cnt);
/* Bytes of the chunks s's tables hold (each chunk once per snapshot; a
 * chunk shared with another snapshot counts in both). */
uint64_t snap_lft_held(const struct snap *s);
/* Reads s's nodes, ports, and every table's chunk pointers and chunks, one
 * byte a page (util_touch: what keeps them mapped under shadow paging),
 * and returns the bytes covered. Stops early when *stop (may be NULL) becomes
 * non-zero. s must stay alive meanwhile; nothing is written. */
uint64_t snap_touch(const struct snap *s, const atomic_int *stop);
/* The same for the pool's free chunks (snap_lft_pool's spare: those the
 * next delta's copies are written to), one slab at a time under the
 * pool's lock; returns their bytes. */
uint64_t snap_lft_touch_spare(const atomic_int *stop);
/* The process's table memory: chunk bytes in use by any snapshot, and
 * free chunk bytes still mapped (in slabs partly used, and the wholly
 * free slabs kept: one, or what snap_lft_want_ready asks; the others are
 * returned to the system). */
void snap_lft_pool(uint64_t *used, uint64_t *spare);
/* The free chunks the pool keeps ready for the next copies: its target
 * changed by chunks (each caller adds what it wants and takes it back
 * later). Wholly free slabs are kept while the spare is below it, and
 * snap_lft_make_ready() maps and first touches slabs up to it, so that a
 * delta's copies neither fault fresh pages in nor wait for them: on a
 * host that backs memory anew (the lab's VM), 40 MB of fresh slabs cost
 * a k=56 cable fault's apply 40-100 ms. snap_lft_make_ready() also gives
 * back the wholly free slabs beyond it (and one); returns the bytes it
 * mapped, and stops between two slabs when *stop (may be NULL) becomes
 * non-zero. */
void snap_lft_want_ready(int64_t chunks);
uint64_t snap_lft_make_ready(const atomic_int *stop);
/* Chunks the calling thread has taken from the pool, ever: the
 * difference over an apply is the chunks it copied. */
uint64_t snap_lft_taken(void);

/*
 * Builder: add nodes first (snap_add_node reserves the port slots), then fill
 * ports through snap_port_of(), then links with snap_link(), then LFTs with
 * snap_set_lft(). Returns the node index, or -1 on ENOMEM/limits.
 */
int64_t snap_add_node(struct snap *s, uint8_t type, uint64_t guid, uint64_t sysimg_guid,
		      uint8_t nports, const char *desc, size_t desc_len);
/* Borrowed until the next snap_add_node(); NULL if port > nports. */
struct snap_port *snap_port_of(struct snap *s, uint32_t node, unsigned port);
/* Connects node a port pa with node b port pb in both directions. */
int snap_link(struct snap *s, uint32_t a, unsigned pa, uint32_t b, unsigned pb);
/* Copies len entries (LIDs 0..len-1) as node's LFT, a new table (a route
 * index built on s does not see it: route.h, swlft). */
int snap_set_lft(struct snap *s, uint32_t node, const uint8_t *lft, uint32_t len);

/* Sorts nodes by GUID and remaps links, so that two producers of the same
 * fabric give byte-identical payloads. Also recomputes max_lid. */
int snap_canonicalize(struct snap *s);

/* After snap_canonicalize(): makes every switch LFT cover exactly LIDs
 * 0..max_lid, cut or padded with SNAP_LFT_NONE, entry 0 = SNAP_LFT_NONE.
 * On ENOMEM (-1) some tables may be done and others not: drop s.
 * Switches size their tables differently (LinearFDBTop, OpenSM's
 * max_lid_ho); one rule makes the plugin's and the collector's snapshots of
 * one fabric byte-identical. */
int snap_normalize_lfts(struct snap *s);

/* ---- codec ------------------------------------------------------------- */

/* Encodes into a malloc'd buffer; caller frees *out. */
int snap_encode(const struct snap *s, uint8_t **out, size_t *outlen, char err[SNAP_ERR_LEN]);

/*
 * Parses just the 64-byte header, so that a stream reader knows how many
 * bytes follow before reading them. Returns the payload length via *payload.
 */
int snap_peek_header(const uint8_t *buf, size_t len, uint64_t *payload, char err[SNAP_ERR_LEN]);

/* Decodes and validates (snap_validate). On success *out is a new snapshot
 * (caller frees with snap_free) that keeps nothing of buf: its tables are
 * copied into chunks; on failure *out is untouched. */
int snap_decode(const uint8_t *buf, size_t len, struct snap **out, char err[SNAP_ERR_LEN]);

/* A full snapshot's tables copied while its bytes arrive (topod's builder,
 * between the reads of a large snapshot), so that its decode after the
 * last byte finds most of them made. snap_early_feed() copies the tables
 * of the records that lie wholly within buf's first have bytes (buf and
 * those bytes must not change until the decode; have grows from call to
 * call); snap_decode_early() takes each table it made for the same
 * record and copies only the others, and is otherwise snap_decode(): the
 * checksum and every check come after the last byte, as before. A record
 * the feed cannot frame stops it (the decode then reports it). The
 * tables hold chunks until the decode or snap_early_free(). */
struct snap_early;
/* How many bytes a feed waits for, at least: each step maps room and
 * wakes a thread, and 16 MiB of tables take it tens of milliseconds. */
#define SNAP_EARLY_STEP ((size_t)16 << 20)
struct snap_early *snap_early_new(void);
/* 0, or -1 on ENOMEM (the feed stops; the decode copies the rest). */
int snap_early_feed(struct snap_early *e, const uint8_t *buf, size_t have);
/* Table entries made so far; of those, entries a decode took. Tables
 * under 128 entries are left to the decode, and the tables made hold at
 * most twice the bytes fed (the feed stops there). */
uint64_t snap_early_entries(const struct snap_early *e);
uint64_t snap_early_taken(const struct snap_early *e);
void snap_early_free(struct snap_early *e);
/* snap_decode() taking e's tables (e may be NULL); e keeps what it did
 * not give, for snap_early_free(). */
int snap_decode_early(const uint8_t *buf, size_t len, struct snap_early *e, struct snap **out,
		      char err[SNAP_ERR_LEN]);

/* Structural checks: indices and port numbers in range, links symmetric,
 * LFT ports exist on their switch, LIDs in range and unique. */
int snap_validate(const struct snap *s, char err[SNAP_ERR_LEN]);
/* snap_validate() less the LFT entries' ports, for a snapshot whose tables
 * are known good on switches with the port counts they were checked
 * against: a delta applied to a valid base (its blocks are checked as
 * they land; a delta changes no port count). The LFTs are 188 MB at
 * k=56: reading them again was most of a cable fault's validation. */
int snap_validate_records(const struct snap *s, char err[SNAP_ERR_LEN]);
/* snap_validate_records() for s made from a valid base by rewriting only
 * the n port slots key[] names (node << 8 | port, ascending, as a delta
 * lists them): those ports, the ports they or their base selves link to,
 * and LIDs and GUIDs that differ from the base's against every end port.
 * What no listed slot touches was checked in the base. A cable fault
 * rewrites two ports of 263,424 at k=56: the whole check sorted them all. */
int snap_validate_ports(const struct snap *s, const struct snap *base, const uint64_t *key, uint32_t n,
			char err[SNAP_ERR_LEN]);

/* ---- files -------------------------------------------------------------- */

/* Temporary files of an atomic write are named PATH SNAP_TMP_SUFFIX XXXXXX. */
#define SNAP_TMP_SUFFIX ".tmp."

/* Writes len bytes to path atomically: a temporary file created with
 * O_EXCL and an unpredictable name (mkostemp), written, fsynced, given
 * mode, renamed over path, and the directory fsynced. Returns 0 only once
 * all of that is durable. */
int snap_write_atomic_mode(const char *path, const void *buf, size_t len, mode_t mode, char err[SNAP_ERR_LEN]);
/* The same with mode 0644 (spool files, tools' output). */
int snap_write_atomic(const char *path, const void *buf, size_t len, char err[SNAP_ERR_LEN]);
/* Removes temporary files an interrupted write of path left behind;
 * returns how many, or -1 with err set. */
int snap_remove_stale_tmp(const char *path, char err[SNAP_ERR_LEN]);
/* Encodes s and writes it with snap_write_atomic(). */
int snap_write_file(const struct snap *s, const char *path, char err[SNAP_ERR_LEN]);
int snap_read_file(const char *path, struct snap **out, char err[SNAP_ERR_LEN]);
/* The bytes of a regular file no larger than any valid snapshot or delta
 * (*buf malloc'd): what snap_read_file() decodes, and the journal's
 * deltas. */
int snap_read_bytes(const char *path, uint8_t **buf, size_t *len, char err[SNAP_ERR_LEN]);
/* realloc() for snapshot bytes written once and then read whole (received
 * from a producer, read from a file): past a few MiB the buffer is asked
 * for in 2 MiB pages. NULL on ENOMEM, p untouched. Freed with free(). */
void *snap_bytes_realloc(void *p, size_t n);
/* One buffer of received bytes kept for the next (a delta's: those of a
 * full snapshot, past SNAP_BYTES_KEEP_MAX, go back), so that the next
 * delta arrives into memory already mapped: on the lab's VM a k=56 cable
 * fault's 4.9 MB arrived into fresh pages in 20 ms, and its checksum, the
 * first read of them here, took 7 ms instead of 0.6. snap_bytes_keep()
 * takes p (NULL is ignored), kept or freed, and frees the one it
 * replaces; snap_bytes_take() returns the kept one if it holds n bytes
 * (freed with free()), else NULL (also for one over four times n, past
 * 1 MiB: the next keep replaces it); snap_bytes_touch_kept() reads it one
 * byte a page (topod's warm interval), and the kept list below, and
 * returns their bytes. */
#define SNAP_BYTES_KEEP_MAX ((size_t)64 << 20)
void snap_bytes_keep(void *p);
void *snap_bytes_take(size_t n);
uint64_t snap_bytes_touch_kept(void);
/* The same for the list of LFT blocks a delta's apply makes
 * (snap_delta_info's block and mask, one allocation): a k=56 cable
 * fault's is 4.2 MB (6 MiB of 2 MiB pages), whose fresh pages took about
 * 18 ms of a real fault's apply in topod beside a busy OpenSM.
 * snap_delta_apply() takes the kept one when it holds the list, and a
 * small delta's apply gives it back whole (snap_delta_info_keep); topod
 * makes one ready after a full snapshot (snap_delta_list_ready). One is
 * kept, none of more than SNAP_LIST_KEEP_MAX bytes (its usable size): a
 * whole fabric's 2.7 million blocks at k=56 are 43 MB. snap_list_trim()
 * frees the kept one if it is over four times most bytes, past 1 MiB:
 * topod's builder, when the lists it wants ready shrink. */
#define SNAP_LIST_KEEP_MAX ((size_t)16 << 20)
void snap_list_keep(void *p);
void *snap_list_take(size_t n);
void snap_list_trim(size_t most);
/* A full snapshot is arriving and bytes of it are in: makes room now for
 * the tables those bytes can hold (the slabs mapped and first touched,
 * lft.c), so that its decode copies into memory already there instead of
 * faulting it in. At most one table byte per payload byte, so the room
 * follows what arrived; snap_decode() gives back what it did not use,
 * snap_release_room() what is left when no decode used it (topod: after
 * each builder job, so a refused snapshot's room stays until the next).
 * The room is the process's: a trim gives back another fabric's too.
 * -1 on ENOMEM (the decode then maps what it needs itself). Any thread. */
int snap_make_room(uint64_t bytes);
void snap_release_room(void);

/* ---- helpers ------------------------------------------------------------ */

/* Is port p of a node of this type an end port, one that owns a LID? Switch
 * port 0 and CA/router ports 1..n; switch external ports share the
 * switch's LID. */
static inline int snap_is_endport(uint8_t type, unsigned p)
{
	return type == SNAP_NODE_SWITCH ? p == 0 : p != 0;
}

/* Does a port in this state carry routes? At least INIT: the plugin copies
 * the subnet at UCAST_ROUTING_DONE, before OpenSM moves freshly routed
 * ports to ACTIVE, and those are exactly the routes being set up. DOWN (or
 * no state) means no physical link. */
static inline int snap_state_linked(uint8_t state)
{
	return state >= SNAP_PORT_INIT;
}

/* The node owning port slot `slot` (an index into s->ports): nodes are
 * laid out in port0 order. O(log nodes). */
static inline uint32_t snap_node_of_slot(const struct snap *s, uint32_t slot)
{
	uint32_t lo = 0, hi = s->nnodes;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->nodes[mid].port0 <= slot)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The highest LID a present port owns with its LMC range, 0 if none. */
static inline uint32_t snap_port_top_lid(const struct snap_port *pt)
{
	return pt->present && pt->lid ? (uint32_t)pt->lid + (1u << (pt->lmc & 7)) - 1 : 0;
}

/* Highest LID any end port owns (LMC ranges included), capped at
 * SNAP_MAX_LID. O(ports). */
uint32_t snap_max_lid(const struct snap *s);
/* Links, each counted once (both directions are stored). O(ports). */
uint32_t snap_count_links(const struct snap *s);

/* ---- comparing --------------------------------------------------------- */

enum snap_diff_kind {
	SNAP_DIFF_NODES = 1,  /* node counts differ (a.node/b.node: the counts) */
	SNAP_DIFF_NODE,       /* node i differs: GUID, type, ports, system GUID or description */
	SNAP_DIFF_PORT,       /* port differs: presence, GUID, LID, LMC, peer (and state, with SNAP_DIFF_STATE) */
	SNAP_DIFF_LFT,        /* a switch's LFT entry for lid differs (past a table's end counts as no path) */
	SNAP_DIFF_ENGINE,     /* routing engine names differ (with SNAP_DIFF_STATE) */
};

struct snap_diff_item {
	enum snap_diff_kind kind;
	uint32_t node;        /* index, the same in both (canonical order) */
	unsigned port;
	uint32_t lid;
};

/* Also compare port state, width and speeds and the engine name: "is this
 * the same capture?" rather than "does it route the same?". */
#define SNAP_DIFF_STATE 1u

/*
 * Compares two canonical snapshots, calling fn (may be NULL) for each
 * difference until it returns nonzero. Generation, sweep, SM and timestamp
 * are never compared: they differ between producers of one fabric. Returns
 * the differences seen (those reported before fn stopped it). Nodes are
 * compared position by position, so once the node lists differ everything
 * after is reported per node.
 */
uint64_t snap_diff(const struct snap *a, const struct snap *b, unsigned flags,
		   int (*fn)(void *ctx, const struct snap_diff_item *d), void *ctx);

uint32_t snap_crc32c(uint32_t crc, const void *buf, size_t len);
const char *snap_node_type_str(uint8_t type);
/* The same port record, as the format carries it: field by field (not the
 * struct's padding), and any absent port equals any other. */
int snap_port_equal(const struct snap_port *u, const struct snap_port *v);
/* Index of the node with this node GUID, or -1. Requires canonical order. */
int64_t snap_find_node(const struct snap *s, uint64_t guid);
/* What a fabric reaches: CAs (hosts' HCAs) and switches with at least one
 * cabled port in Init or better (the states topod routes over). An SM that
 * lost its port sees its own HCA and nothing else; no CA at all is an
 * empty fabric, which no loader accepts (docs/reliability.md, i37.3). */
struct snap_live {
	uint32_t cas, switches;
};
void snap_count_live(const struct snap *s, struct snap_live *out);
/* 0, or -1 with err saying that s reaches no host (what it holds). */
int snap_check_hosts(const struct snap *s, char err[SNAP_ERR_LEN]);
/* The port slot with this LID: sets *node and *port; -1 if none. Linear. */
int snap_find_lid(const struct snap *s, uint16_t lid, uint32_t *node, unsigned *port);
/* Writes desc with every byte outside printable ASCII, '"' and '\\' escaped
 * as \xHH, so that hostile NodeDescriptions cannot break logs or text
 * formats. Always NUL-terminates; truncates to outlen. */
void snap_escape(const char *desc, char *out, size_t outlen);

/* Wall-clock time in microseconds: timestamps and generations. */
static inline uint64_t snap_now_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

#endif
