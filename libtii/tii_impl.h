/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tii_impl.h - libtii's internals: the handle, the transport (net.c), one
 * request with failover (request.c) and reply-parsing helpers (parse.c).
 *
 * cmds.c: the commands libtii sends and the head keys it reads of each.
 *
 * Internal names carry a "tii__" prefix plus their module: hidden in the
 * shared object by -fvisibility=hidden, and unlikely to collide with an
 * application's symbols when libtii.a is linked statically.
 *
 * Errors: TII_E_* as in tii.h. Nothing here prints or exits.
 */
#ifndef TII_IMPL_H
#define TII_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "tii.h"

/* Longest reply line accepted. The longest legitimate ones are "group"
 * lines of "shared", which repeat host names as the request spelled them,
 * so they are never much longer than a request line; anything past this
 * is a misbehaving server, not a reason to buffer without end. */
#define TII_LINE_MAX (TOPO_LINE_MAX + 1024)
/* Most lines one reply may announce: a TII_MATRIX_MAX-host pathmatrix has
 * at most 4096 groups + switches + 4096 * 4096 route lines (~16.8M); a
 * larger count is refused at once. Lines are still only read as they
 * arrive, within the deadline and tii_get_max_reply_bytes(). */
#define TII_REPLY_LINES_MAX (1u << 25)
/* key=value pairs kept from a header line; topod's longest (info) has ~20. */
#define TII_KV_MAX 48

/* ---- cmds.c: the commands libtii sends, the head keys it reads ------------ */

enum tii__cmd {
	TII__PING, TII__INFO, TII__DEPTH, TII__HOPS, TII__PATH, TII__HOPSBATCH, TII__HOPSMATRIX,
	TII__PATHMATRIX, TII__DELAYMATRIX, TII__CLUSTERS, TII__TREE, TII__SHARED, TII__ORDER, TII__PICK,
	TII__MAP, TII__RESOLVE, TII__HOSTS, TII__PLANES, TII__PLANE, TII__WATCH, TII__HISTORY, TII__DIFF,
	TII__LOAD, TII__SCHEDULE, TII__SIMGRID, TII__SWITCHES, TII__SHOW, TII__LINKS,
	TII__NCMDS
};

struct tii__cmd_row {
	const char *name;    /* the command word sent */
	const char *keys;    /* head keys the parsers read, space-separated */
	const char *legacy;  /* keys an older topod sent instead, read for compatibility */
};

extern const struct tii__cmd_row tii__cmds[TII__NCMDS];

/* 1 if row declares key (in keys or legacy). */
int tii__cmd_reads(const struct tii__cmd_row *row, const char *key);

struct tii_server {
	char *spec;  /* "host:port" as given, for messages */
	char *host;  /* without brackets */
	char *port;
};

/* The connection and its receive buffer. Invariants: fd < 0 means not
 * connected and len == off == 0; unread bytes are buf[off .. len). */
struct tii__conn {
	int fd;
	char *buf;
	size_t len, off, cap;
	uint64_t rx;   /* bytes received since the request was sent */
	uint64_t rx_max;   /* TII_E_TOOBIG past this many (the handle's limit) */
	int err;       /* errno of the last failed connect (ECONNREFUSED: retry) */
};

struct tii {
	struct tii_server srv[TII_SERVERS_MAX];
	size_t nsrv;
	size_t cur;            /* server of the open connection or the next try */
	long last;             /* server that answered last, -1 before any */
	struct tii__conn c;
	int timeout_ms;
	size_t max_reply;      /* tii_set_max_reply_bytes() */
	uint64_t rng;          /* backoff jitter (xorshift64), per handle: no global state */
	uint64_t gen;          /* of the last successful answer */
	char msg[512];         /* tii_last_message() */
	char plane[TOPO_PLANE_NAME_MAX + 1]; /* "" for auto */
	struct tii__conn w;    /* tii_watch_start()'s own connection, fd -1 when none */
	int w_plane;           /* it sent "plane NAME" first: one more reply line */
	int64_t w_deadline;
	uint64_t sched_bytes;  /* tii_set_schedule_advice(): 0 = topod's default */
	int sched_asis;        /* 1: fallback=0, the algorithm as asked */
	int sched_ranks;       /* tii_set_schedule_form(): 1 = rank form */
	int sched_window;      /* tii_set_schedule_run(): -1 not sent (topod's 1), 0 auto, 1..TOPO_SCHED_WINDOW_MAX */
	int sched_native;      /* tii_set_schedule_run(): -1 none, else TII_NATIVE_* */
	int pick_run;          /* tii_set_pick_run(): -1 not sent (topod's bound), else TII_PICK_RUN_* */
	const struct tii__cmd_row *row; /* of the request being built (tii__req_begin) */
	char *req;             /* the request being built, without '\n' */
	size_t reqlen, reqcap, reqargs;
};

/* ---- net.c: one TCP connection with deadlines ---------------------------- */

/* Milliseconds on the monotonic clock. */
int64_t tii__net_now_ms(void);

/* Connects c to host:port before deadline. On error c stays closed, why
 * gets a short reason and c->err the errno (0 if none). TII_E_CONNECT or
 * TII_E_TIMEOUT. */
int tii__net_connect(struct tii__conn *c, const char *host, const char *port, int64_t deadline,
		     char *why, size_t whylen);
void tii__net_close(struct tii__conn *c);

/* Sends len bytes before deadline. TII_E_IO (peer gone), TII_E_TIMEOUT. */
int tii__net_send(struct tii__conn *c, const char *p, size_t len, int64_t deadline);

/* The next line, without its "\n" (and a "\r" before it), NUL-terminated in
 * place; borrowed until the next call on c. TII_E_IO if the peer closes
 * first, TII_E_TIMEOUT once the deadline passes (checked after every
 * read, so a server that keeps sending is cut off too), TII_E_TOOBIG past
 * c->rx_max bytes since the request, TII_E_PROTO for a line over
 * TII_LINE_MAX or one holding a NUL byte, TII_E_NOMEM. */
int tii__net_readline(struct tii__conn *c, int64_t deadline, char **line, size_t *len);

/* 1 if the peer has sent something or closed while we were not asking
 * (a stale "ERR IDLE" or an EOF): the connection must not be reused. */
int tii__net_stale(struct tii__conn *c);

/* ---- request.c: build, send, read with failover ---------------------------- */

struct tii__kv {
	size_t n;
	/* A reply's head, as a parser gets it: only the keys this row declares
	 * are seen (tii__kv_get). NULL (every key) for body lines and for the
	 * generic reads of request.c; tii__kv_parse() sets it NULL. */
	const struct tii__cmd_row *row;
	const char *key[TII_KV_MAX];
	const char *val[TII_KV_MAX];   /* unescaped if it was quoted */
};

/*
 * How a caller consumes one reply. head() gets the OK line's pairs and the
 * announced line count (0 if none) and must (re)initialise ctx: after a
 * failure on one server the request is retried on another and head() runs
 * again. line() gets each line (0-based i), writable in place. Both return
 * 0 or TII_E_*: TII_E_PROTO means the server misbehaved (next server),
 * anything else is final.
 */
struct tii__handler {
	int (*head)(void *ctx, const struct tii__kv *kv, size_t nlines);
	int (*line)(void *ctx, size_t i, char *line, size_t len);
	int nogen;   /* the reply names no generation ("OK pong") */
};

/* Starts a request with the command word of row cmd (cmds.c). */
int tii__req_begin(tii_t *t, enum tii__cmd cmd);
/* Appends one argument, checked as a host name (TII_E_INVAL) and against
 * the protocol's limits (TII_E_TOOMANY). */
int tii__req_host(tii_t *t, const char *host);
int tii__req_hosts(tii_t *t, const char *const *hosts, size_t n);
/* Appends a word built by the library itself (a graph's adjacency,
 * "host*slots", an "A:B" pair of checked names), counted against the limits but not checked as a name. */
int tii__req_word(tii_t *t, const char *w, size_t n);
/* Appends a number. */
int tii__req_int(tii_t *t, long v);

/* Sends the request built so far and consumes the reply (see the top of
 * tii.h for failover). Sets t->gen and t->msg. */
int tii__request(tii_t *t, const struct tii__handler *h, void *ctx);

/* Sets tii_last_message(). */
void tii__set_msg(tii_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- parse.c: reply fields ------------------------------------------------ */

/* Splits s in place into key=value pairs (values may be "quoted", with
 * \xHH escapes). Words without '=' are skipped. TII_E_PROTO on a bad quote
 * or more than TII_KV_MAX pairs. */
int tii__kv_parse(char *s, struct tii__kv *kv);
/* The value of key, or NULL: absent, or not declared by kv->row (cmds.c). */
const char *tii__kv_get(const struct tii__kv *kv, const char *key);
/* The value of key as a number; TII_E_PROTO if absent or malformed. */
int tii__kv_u64(const struct tii__kv *kv, const char *key, uint64_t *v);
int tii__kv_int(const struct tii__kv *kv, const char *key, long min, long max, long *v);

/* Strict numbers: the whole string, no sign, no spaces, no overflow. */
int tii__parse_u64(const char *s, int base, uint64_t *v);
int tii__parse_long(const char *s, long min, long max, long *v);
/* A time in microseconds as topod prints it (docs/cost-model.md), into
 * seconds; "-" (unknown) is -1. */
int tii__parse_us(const char *s, double *seconds);
/* "0x" followed by 1..16 hex digits. */
int tii__parse_guid(const char *s, uint64_t *v);
/* "0xGUID:PORT": a directed link as topod names it (load.c; map's bottleneck too). */
int tii__guid_port(const char *w, uint64_t *guid, int *port);

/* Makes *p (an array of elem-byte items, *cap of them) hold at least need,
 * doubling from 16: results grow by the lines actually received, never by a
 * count a server announces. TII_E_NOMEM, or 0. */
int tii__grow(void **p, size_t *cap, size_t need, size_t elem);

/* The next space-separated word of *p, NUL-terminated in place, or NULL. */
char *tii__word(char **p);

/* Unescapes a \xHH-escaped string in place (stops at an escaped NUL).
 * TII_E_PROTO on a malformed escape. */
int tii__unescape(char *s);

/* Checks one host name for the protocol (see tii.h). */
int tii__check_name(const char *s);

#endif
