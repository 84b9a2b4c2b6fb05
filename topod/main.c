/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topod - the topology service for InfiniBand clusters.
 *
 * main() only wires things together: options and config file, the start-up
 * fabric (state file, --load, or text dumps), the builder thread and the
 * server loop. Exit status: 0 clean shutdown, 1 failure, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "auth.h"
#include "build.h"
#include "cmd.h"
#include "counters.h"
#include "history.h"
#include "journal.h"
#include "plane_cmd.h"
#include "log.h"
#include "namemap_file.h"
#include "server.h"
#include "http.h"
#include "store.h"
#include "textdump.h"
#include "util.h"

#define DEFAULT_LISTEN "127.0.0.1:" TOPO_PORT_DEFAULT
#define CONFIG_LINE_MAX 1024

struct options {
	struct server_config srv;
	const char *state_dir;
	const char *load;
	const char *topology, *lfts;
	const char *pidfile;
	const char *namemap;
	const char *ingest_key;
	struct snap_key key;
	int threads;
	int foreground;
	int req_mem_set;          /* --max-request-memory given: no default from RAM */
	struct http_config http;  /* --http: addr NULL when off */
	unsigned history;
	unsigned long long history_bytes;
	double shrink_guard;      /* build.h: builder_set_guard */
	unsigned warm_s;          /* build.h: builder_set_warm */
	unsigned shrink_agree;
	/* Fabric planes, in the order their ingests were named ("default" for
	 * an unnamed one). */
	char plane_name[TOPO_PLANES_MAX][TOPO_PLANE_NAME_MAX + 1];
	int nplanes;
	/* config-file strings live here so that cfg pointers stay valid */
	char *owned[64];
	int nowned;
};

static const char *prog = "topod";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  -l, --listen ADDR:PORT     answer queries here (repeatable; default " DEFAULT_LISTEN ")\n"
		"  -i, --ingest SPEC          receive snapshots: unix:PATH or tcp:ADDR:PORT (repeatable)\n"
		"  -a, --admin PATH           admin UNIX socket (stats, reload, shutdown)\n"
		"  -d, --state-dir DIR        persist every good snapshot in DIR/fabric.snap; serve it at start\n"
		"  -t, --threads N            threads for rebuilds and for heavy requests (default: all cores)\n"
		"  -f, --foreground           do not detach\n"
		"  -c, --config FILE          read options from FILE (key = value, keys as long options)\n"
		"  -L, --load FILE            serve this snapshot file at start (overrides the state file)\n"
		"      --topology FILE        serve an ibnetdiscover topology file at start ...\n"
		"      --lfts FILE            ... with these ibroute / opensm-lfts.dump LFT dumps\n"
		"      --max-conns N          query connections (default: what the descriptor limit allows)\n"
		"      --max-admin N          admin connections, apart from queries (default 16)\n"
		"      --idle-timeout SEC     close idle query connections (default 300)\n"
		"      --output-limit BYTES   unread replies one client may hold (default 512M)\n"
		"      --output-soft-limit BYTES:SEC  ... or hold for SEC seconds (default 32M:20)\n"
		"      --write-timeout SEC    cut a client that reads nothing for SEC (default 30)\n"
		"      --output-budget BYTES  admit heavy requests only below this much unread (default 256M)\n"
		"      --heavy-queue N        heavy requests waiting for a worker at most (default 256)\n"
		"      --max-snapshot BYTES   largest snapshot accepted on ingest (default 512M)\n"
		"      --ingest-timeout SEC   drop a producer that sends nothing for SEC (default 120)\n"
		"      --warm-interval SEC    make the next delta's memory ready and read the served generation every SEC\n"
		"                             to keep it mapped, 0: off (default 5)\n"
		"      --history N            generations kept for history/diff (default 100)\n"
		"      --history-bytes BYTES  their deltas take at most this much (default 128M)\n"
		"      --shrink-guard FRACTION  hold back a generation reaching FRACTION fewer HCAs or switches (0.5)\n"
		"      --shrink-agree N       ... and serve it when N later ones agree, 0: only admin confirm (3)\n"
		"      --max-ingest-conns N   snapshot producers connected at once (default 8)\n"
		"      --ingest-key FILE      shared key: TCP ingest accepts only snapshots signed with it\n"
		"      --ingest-insecure      accept unsigned snapshots on TCP ingest (not recommended)\n"
		"      --ingest-group NAME    members may feed the UNIX ingest socket (default: topod's group)\n"
		"      --pidfile FILE         write the daemon's PID\n"
		"      --node-name-map FILE   name hosts from this infiniband-diags node-name-map\n"
		"      --max-request-memory BYTES  heavy requests in flight reserve at most this (default RAM/4)\n"
		"      --request-timeout SEC  deadline of every heavy request, 0 none (default 60)\n"
		"      --client-budget BYTES  all clients' buffered input and unread output (default 1G)\n"
		"      --http ADDR:PORT       serve /metrics (Prometheus) and the web view here (default: off)\n"
		"      --http-max-conns N     HTTP requests answered at once, 2N connections (default 64)\n"
		"      --http-per-peer N      connections one address may hold without a whole request (default 8)\n"
		"      --http-header-timeout SEC  an HTTP request's line and headers within SEC (default 10)\n"
		"      --http-body-timeout SEC    and its body within SEC of them (default 10)\n"
		"      --http-slurm           the web view may look up Slurm job IDs (runs squeue)\n"
		"      --http-timeout SEC     close kept-alive HTTP connections idle, or not reading, SEC (default 30)\n"
		"      --http-host NAME,...   names an HTTP Host header may give (default: this host's, localhost)\n"
		"  -v, --verbose              log debug messages\n"
		"  -q, --quiet                log errors and warnings only\n"
		"      --commands             list the query protocol's commands and exit\n"
		"      --counters             list the counters (stats keys, metric families) and exit\n"
		"  -V, --version              print the version and exit\n"
		"  -h, --help\n",
		prog);
}

enum {
	OPT_TOPOLOGY = 256,
	OPT_LFTS,
	OPT_MAX_CONNS,
	OPT_IDLE,
	OPT_INGEST_TIMEOUT,
	OPT_WARM,
	OPT_MAX_SNAPSHOT,
	OPT_HISTORY,
	OPT_HISTORY_BYTES,
	OPT_PIDFILE,
	OPT_NAMEMAP,
	OPT_COMMANDS,
	OPT_COUNTERS,
	OPT_MAX_ADMIN,
	OPT_OUT_LIMIT,
	OPT_OUT_SOFT,
	OPT_WRITE_TIMEOUT,
	OPT_OUT_BUDGET,
	OPT_HEAVY_QUEUE,
	OPT_MAX_INGEST,
	OPT_INGEST_KEY,
	OPT_INGEST_INSECURE,
	OPT_INGEST_GROUP,
	OPT_MAX_REQ_MEM,
	OPT_REQ_TIMEOUT,
	OPT_CLIENT_BUDGET,
	OPT_HTTP,
	OPT_HTTP_MAX_CONNS,
	OPT_HTTP_SLURM,
	OPT_HTTP_TIMEOUT,
	OPT_HTTP_HOST,
	OPT_HTTP_PER_PEER,
	OPT_HTTP_HEADER_TIMEOUT,
	OPT_HTTP_BODY_TIMEOUT,
	OPT_SHRINK_GUARD,
	OPT_SHRINK_AGREE,
};

static const struct option longopts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "ingest", required_argument, NULL, 'i' },
	{ "admin", required_argument, NULL, 'a' },
	{ "state-dir", required_argument, NULL, 'd' },
	{ "threads", required_argument, NULL, 't' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "config", required_argument, NULL, 'c' },
	{ "load", required_argument, NULL, 'L' },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "lfts", required_argument, NULL, OPT_LFTS },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "max-admin", required_argument, NULL, OPT_MAX_ADMIN },
	{ "output-limit", required_argument, NULL, OPT_OUT_LIMIT },
	{ "output-soft-limit", required_argument, NULL, OPT_OUT_SOFT },
	{ "write-timeout", required_argument, NULL, OPT_WRITE_TIMEOUT },
	{ "output-budget", required_argument, NULL, OPT_OUT_BUDGET },
	{ "heavy-queue", required_argument, NULL, OPT_HEAVY_QUEUE },
	{ "max-ingest-conns", required_argument, NULL, OPT_MAX_INGEST },
	{ "ingest-key", required_argument, NULL, OPT_INGEST_KEY },
	{ "ingest-insecure", no_argument, NULL, OPT_INGEST_INSECURE },
	{ "ingest-group", required_argument, NULL, OPT_INGEST_GROUP },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "ingest-timeout", required_argument, NULL, OPT_INGEST_TIMEOUT },
	{ "warm-interval", required_argument, NULL, OPT_WARM },
	{ "max-snapshot", required_argument, NULL, OPT_MAX_SNAPSHOT },
	{ "history", required_argument, NULL, OPT_HISTORY },
	{ "history-bytes", required_argument, NULL, OPT_HISTORY_BYTES },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "node-name-map", required_argument, NULL, OPT_NAMEMAP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "commands", no_argument, NULL, OPT_COMMANDS },
	{ "counters", no_argument, NULL, OPT_COUNTERS },
	{ "version", no_argument, NULL, 'V' },
	{ "max-request-memory", required_argument, NULL, OPT_MAX_REQ_MEM },
	{ "request-timeout", required_argument, NULL, OPT_REQ_TIMEOUT },
	{ "client-budget", required_argument, NULL, OPT_CLIENT_BUDGET },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "http-max-conns", required_argument, NULL, OPT_HTTP_MAX_CONNS },
	{ "http-slurm", no_argument, NULL, OPT_HTTP_SLURM },
	{ "http-timeout", required_argument, NULL, OPT_HTTP_TIMEOUT },
	{ "http-host", required_argument, NULL, OPT_HTTP_HOST },
	{ "http-per-peer", required_argument, NULL, OPT_HTTP_PER_PEER },
	{ "http-header-timeout", required_argument, NULL, OPT_HTTP_HEADER_TIMEOUT },
	{ "http-body-timeout", required_argument, NULL, OPT_HTTP_BODY_TIMEOUT },
	{ "shrink-guard", required_argument, NULL, OPT_SHRINK_GUARD },
	{ "shrink-agree", required_argument, NULL, OPT_SHRINK_AGREE },
	{ NULL, 0, NULL, 0 },
};

static int parse_uint(const char *name, const char *v, unsigned long long lo, unsigned long long hi,
		      unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi) {
		fprintf(stderr, "%s: --%s: expected a number in %llu..%llu, got '%s'\n", prog, name, lo, hi, v);
		return -1;
	}
	*out = x;
	return 0;
}

/* "512M", "1G", "65536": bytes, with an optional K/M/G (binary) suffix. */
static int parse_size(const char *name, const char *v, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || end == v || *end || x > (1ULL << 40) >> shift) {
		fprintf(stderr, "%s: --%s: expected bytes (e.g. 512M), got '%s'\n", prog, name, v);
		return -1;
	}
	*out = x << shift;
	return 0;
}

static int parse_config(struct options *o, const char *path);

/* "[PLANE=]unix:PATH" or "[PLANE=]tcp:ADDR:PORT": the plane it feeds. */
static int add_ingest(struct options *o, const char *val)
{
	const char *eq = strchr(val, '='), *colon = strchr(val, ':');
	char name[TOPO_PLANE_NAME_MAX + 1] = "default";
	if (eq && (!colon || eq < colon)) {
		size_t n = (size_t)(eq - val);
		if (n > TOPO_PLANE_NAME_MAX) {
			fprintf(stderr, "%s: --ingest %s: a plane name has at most %d characters\n", prog, val,
				TOPO_PLANE_NAME_MAX);
			return -1;
		}
		memcpy(name, val, n);
		name[n] = '\0';
		val = eq + 1;
	}
	if (!plane_name_ok(name) || !strcmp(name, "auto")) {
		fprintf(stderr, "%s: --ingest: bad plane name '%s' (letters, digits, '_' and '-'; not \"auto\")\n", prog,
			name);
		return -1;
	}
	int p = 0;
	while (p < o->nplanes && strcmp(o->plane_name[p], name))
		p++;
	if (p == o->nplanes) {
		if (o->nplanes == TOPO_PLANES_MAX) {
			fprintf(stderr, "%s: --ingest: more than %d planes\n", prog, TOPO_PLANES_MAX);
			return -1;
		}
		snprintf(o->plane_name[o->nplanes++], sizeof(o->plane_name[0]), "%s", name);
	}
	o->srv.ingest_plane[o->srv.ningest] = p;
	o->srv.ingest[o->srv.ningest++] = val;
	return 0;
}

/* --output-soft-limit BYTES:SECONDS */
static int apply_soft_limit(struct options *o, const char *val)
{
	char buf[64];
	unsigned long long x;
	const char *colon = strchr(val, ':');
	if (!colon || (size_t)(colon - val) >= sizeof(buf)) {
		fprintf(stderr, "%s: --output-soft-limit: expected BYTES:SECONDS, got '%s'\n", prog, val);
		return -1;
	}
	memcpy(buf, val, (size_t)(colon - val));
	buf[colon - val] = '\0';
	unsigned long long bytes;
	if (parse_size("output-soft-limit", buf, &bytes) ||
	    parse_uint("output-soft-limit", colon + 1, 1, 86400, &x))
		return -1;
	o->srv.out_soft = bytes;
	o->srv.out_soft_s = (unsigned)x;
	return 0;
}

/* The server's limits: connections, unread output, queues, timeouts and
 * the largest snapshot. */
static int apply_limit(struct options *o, int c, const char *val)
{
	unsigned long long x;
	switch (c) {
	case OPT_MAX_CONNS:
		if (parse_uint("max-conns", val, 1, 1000000, &x))
			return -1;
		o->srv.max_conns = (unsigned)x;
		return 0;
	case OPT_MAX_ADMIN:
		if (parse_uint("max-admin", val, 1, 1024, &x))
			return -1;
		o->srv.max_admin = (unsigned)x;
		return 0;
	case OPT_OUT_LIMIT:
		if (parse_size("output-limit", val, &x))
			return -1;
		o->srv.out_hard = x;
		return 0;
	case OPT_OUT_BUDGET:
		if (parse_size("output-budget", val, &x))
			return -1;
		o->srv.out_budget = x;
		return 0;
	case OPT_OUT_SOFT:
		return apply_soft_limit(o, val);
	case OPT_WRITE_TIMEOUT:
		if (parse_uint("write-timeout", val, 1, 86400, &x))
			return -1;
		o->srv.write_timeout_s = (unsigned)x;
		return 0;
	case OPT_HEAVY_QUEUE:
		if (parse_uint("heavy-queue", val, 1, 100000, &x))
			return -1;
		o->srv.heavy_queue = (unsigned)x;
		return 0;
	case OPT_MAX_INGEST:
		if (parse_uint("max-ingest-conns", val, 1, 1024, &x))
			return -1;
		o->srv.max_ingest = (unsigned)x;
		return 0;
	case OPT_IDLE:
		if (parse_uint("idle-timeout", val, 1, 86400 * 7, &x))
			return -1;
		o->srv.idle_timeout_s = (unsigned)x;
		return 0;
	case OPT_INGEST_TIMEOUT:
		if (parse_uint("ingest-timeout", val, 1, 86400, &x))
			return -1;
		o->srv.ingest_timeout_s = (unsigned)x;
		return 0;
	case OPT_MAX_SNAPSHOT:
		if (parse_size("max-snapshot", val, &x))
			return -1;
		if (x < SNAP_HEADER_LEN || x > SNAP_MAX_PAYLOAD) {
			fprintf(stderr, "%s: --max-snapshot: %llu is outside 64..8G\n", prog, x);
			return -1;
		}
		o->srv.max_snapshot = x;
		return 0;
	}
	return -1;
}

/* --ingest-group NAME */
static int apply_ingest_group(struct options *o, const char *val)
{
	struct group *g = getgrnam(val);
	if (!g) {
		fprintf(stderr, "%s: --ingest-group: no group '%s'\n", prog, val);
		return -1;
	}
	o->srv.ingest_gid = g->gr_gid;
	o->srv.ingest_has_group = 1;
	return 0;
}

/* The bounded resources: heavy requests' memory and deadline, the clients'
 * buffers (0 turns each off). */
static int apply_budget(struct options *o, int c, const char *val)
{
	unsigned long long x;
	if (c == OPT_REQ_TIMEOUT) {
		if (parse_uint("request-timeout", val, 0, 86400, &x))
			return -1;
		o->srv.request_timeout_s = (unsigned)x;
		return 0;
	}
	if (parse_size(c == OPT_MAX_REQ_MEM ? "max-request-memory" : "client-budget", val, &x))
		return -1;
	if (c == OPT_MAX_REQ_MEM) {
		o->srv.max_request_mem = x;
		o->req_mem_set = 1;
	} else {
		o->srv.client_budget = x;
	}
	return 0;
}

/* The shrink guard (build.h): a fraction in (0, 1], and a count. */
static int apply_guard(struct options *o, int c, const char *val)
{
	if (c == OPT_SHRINK_AGREE) {
		unsigned long long x;
		if (parse_uint("shrink-agree", val, 0, 1000, &x))
			return -1;
		o->shrink_agree = (unsigned)x;
		return 0;
	}
	char *end;
	errno = 0;
	double f = strtod(val, &end);
	if (errno || end == val || *end || !(f > 0 && f <= 1)) {
		fprintf(stderr, "%s: --shrink-guard: expected a fraction above 0 and at most 1 (1: off), got '%s'\n", prog,
			val);
		return -1;
	}
	o->shrink_guard = f;
	return 0;
}

/* The HTTP endpoint's options (http.h). */
static int apply_http(struct options *o, int c, const char *val)
{
	static const struct { int c; const char *name; unsigned long long lo, hi; } r[] = {
		{ OPT_HTTP_MAX_CONNS, "http-max-conns", 1, 4096 },   { OPT_HTTP_PER_PEER, "http-per-peer", 1, 8192 },
		{ OPT_HTTP_TIMEOUT, "http-timeout", 1, 3600 },       { OPT_HTTP_HEADER_TIMEOUT, "http-header-timeout", 1, 3600 },
		{ OPT_HTTP_BODY_TIMEOUT, "http-body-timeout", 1, 3600 },
	};
	unsigned *dst[] = { &o->http.max_conns, &o->http.per_peer, &o->http.timeout_s, &o->http.header_timeout_s,
			    &o->http.body_timeout_s };
	unsigned long long x;
	switch (c) {
	case OPT_HTTP: o->http.addr = val; return 0;
	case OPT_HTTP_HOST: o->http.hosts = val; return 0;
	case OPT_HTTP_SLURM: o->http.slurm = 1; return 0;
	}
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (r[i].c == c) {
			if (parse_uint(r[i].name, val, r[i].lo, r[i].hi, &x))
				return -1;
			*dst[i] = (unsigned)x;
			return 0;
		}
	return -1;
}

/* Applies one option; val is borrowed for the life of the process. */
static int apply(struct options *o, int c, const char *val)
{
	unsigned long long x;
	switch (c) {
	case 'l':
		if (o->srv.nlisten == SERVER_MAX_ADDRS)
			goto toomany;
		o->srv.listen[o->srv.nlisten++] = val;
		return 0;
	case 'i':
		if (o->srv.ningest == SERVER_MAX_ADDRS)
			goto toomany;
		return add_ingest(o, val);
	case 'a': o->srv.admin = val; return 0;
	case 'd': o->state_dir = val; return 0;
	case 't':
		if (parse_uint("threads", val, 1, 1024, &x))
			return -1;
		o->threads = (int)x;
		return 0;
	case 'f': o->foreground = 1; return 0;
	case 'c': return parse_config(o, val);
	case 'L': o->load = val; return 0;
	case OPT_TOPOLOGY: o->topology = val; return 0;
	case OPT_LFTS: o->lfts = val; return 0;
	case OPT_MAX_CONNS: case OPT_MAX_ADMIN: case OPT_OUT_LIMIT: case OPT_OUT_BUDGET: case OPT_OUT_SOFT:
	case OPT_WRITE_TIMEOUT: case OPT_HEAVY_QUEUE: case OPT_MAX_INGEST: case OPT_IDLE: case OPT_MAX_SNAPSHOT:
	case OPT_INGEST_TIMEOUT:
		return apply_limit(o, c, val);
	case OPT_WARM:
		if (parse_uint("warm-interval", val, 0, 86400, &x))
			return -1;
		o->warm_s = (unsigned)x;
		return 0;
	case OPT_INGEST_KEY: o->ingest_key = val; return 0;
	case OPT_INGEST_INSECURE: o->srv.ingest_insecure = 1; return 0;
	case OPT_INGEST_GROUP: return apply_ingest_group(o, val);
	case OPT_MAX_REQ_MEM: case OPT_REQ_TIMEOUT: case OPT_CLIENT_BUDGET:
		return apply_budget(o, c, val);
	case OPT_HISTORY:
		if (parse_uint("history", val, 1, 100000, &x))
			return -1;
		o->history = (unsigned)x;
		return 0;
	case OPT_HISTORY_BYTES:
		if (parse_size("history-bytes", val, &x))
			return -1;
		o->history_bytes = x;
		return 0;
	case OPT_PIDFILE: o->pidfile = val; return 0;
	case OPT_SHRINK_GUARD: case OPT_SHRINK_AGREE: return apply_guard(o, c, val);
	case OPT_HTTP: case OPT_HTTP_HOST: case OPT_HTTP_SLURM: case OPT_HTTP_MAX_CONNS: case OPT_HTTP_TIMEOUT:
	case OPT_HTTP_PER_PEER: case OPT_HTTP_HEADER_TIMEOUT: case OPT_HTTP_BODY_TIMEOUT:
		return apply_http(o, c, val);
	case OPT_NAMEMAP: o->namemap = val; return 0;
	case 'v': log_verbosity = TLOG_DEBUG; return 0;
	case 'q': log_verbosity = TLOG_WARN; return 0;
	}
	return -1;
toomany:
	fprintf(stderr, "%s: at most %d listen/ingest addresses\n", prog, SERVER_MAX_ADDRS);
	return -1;
}

/* "key = value" lines; '#' comments; keys are the long option names. */
static int parse_config(struct options *o, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	char line[CONFIG_LINE_MAX];
	int lineno = 0, rc = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			fprintf(stderr, "%s: %s:%d: line too long\n", prog, path, lineno);
			rc = -1;
			break;
		}
		char *s = line + strspn(line, " \t");
		s[strcspn(s, "#\r\n")] = '\0';
		if (!*s)
			continue;
		char *eq = strchr(s, '=');
		char *key = s, *val = eq ? eq + 1 : NULL;
		if (eq)
			*eq = '\0';
		key[strcspn(key, " \t")] = '\0';
		if (val) {
			val += strspn(val, " \t");
			size_t l = strlen(val);
			while (l && (val[l - 1] == ' ' || val[l - 1] == '\t'))
				val[--l] = '\0';
		}
		const struct option *opt = NULL;
		for (const struct option *p = longopts; p->name; p++)
			if (!strcmp(p->name, key))
				opt = p;
		if (!opt || !strcmp(key, "config") || !strcmp(key, "help") || !strcmp(key, "commands") ||
		    !strcmp(key, "counters") || !strcmp(key, "version")) {
			const char *near = util_did_you_mean(key, &longopts[0].name, sizeof(longopts) / sizeof(longopts[0]), sizeof(longopts[0]));
			fprintf(stderr, "%s: %s:%d: unknown key '%s'%s%s%s\n", prog, path, lineno, key,
				near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
			rc = -1;
			break;
		}
		if ((opt->has_arg == required_argument) != (val && *val)) {
			fprintf(stderr, "%s: %s:%d: '%s' %s\n", prog, path, lineno, key,
				opt->has_arg == required_argument ? "needs a value" : "takes no value");
			rc = -1;
			break;
		}
		char *copy = NULL;
		if (val) {
			if (o->nowned == (int)(sizeof(o->owned) / sizeof(o->owned[0]))) {
				fprintf(stderr, "%s: %s: too many settings\n", prog, path);
				rc = -1;
				break;
			}
			copy = o->owned[o->nowned++] = strdup(val);
		}
		if (apply(o, opt->val, copy)) {
			rc = -1;
			break;
		}
	}
	fclose(f);
	return rc;
}

static void journal_report(void *arg, const char *msg)
{
	(void)arg;
	tlog(TLOG_WARN, "%s", msg);
}

/* Loads the start-up fabric named by the options, or the state file. */
/* What a plane serves at start (and on reload): --topology or --load for
 * the first plane, else its state file and journal. */
static struct ingest_job *startup_job(const struct options *o, int first, const char *state_dir,
				      const char *state_file, char err[SNAP_ERR_LEN], int *none)
{
	struct snap *s = NULL;
	struct ingest_job *j = calloc(1, sizeof(*j));
	*none = 0;
	if (!j) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		return NULL;
	}
	j->confirmed = 1; /* the operator's: never held back by the shrink guard */
	if (first && o->topology) {
		if (snap_load_text(o->topology, o->lfts, &s, err))
			goto bad;
		snprintf(j->source, sizeof(j->source), "text %.80s", o->topology);
		j->persist = 1;
	} else if (first && o->load) {
		if (snap_read_file(o->load, &s, err))
			goto bad;
		snprintf(j->source, sizeof(j->source), "file %.80s", o->load);
		j->persist = 1;
	} else if (state_file[0] && access(state_file, F_OK) == 0) {
		if (snap_read_file(state_file, &s, err))
			goto bad;
		/* The newest intact journal entry (journal.h); damaged ones are
		 * renamed aside and logged, never a reason to stop. */
		struct journal_replay jr = { .quarantine = 1, .report = journal_report };
		uint64_t g0 = s->generation;
		int nj = state_dir ? journal_replay(state_dir, &s, &jr) : 0;
		if (nj)
			snprintf(j->source, sizeof(j->source), "state %.60s + journal", state_file);
		else
			snprintf(j->source, sizeof(j->source), "state %.80s", state_file);
		if (nj || jr.bad)
			tlog(jr.bad ? TLOG_WARN : TLOG_INFO,
			     "journal: serving generation %llu (fabric.snap holds %llu); %d entr%s quarantined",
			     (unsigned long long)s->generation, (unsigned long long)g0, jr.bad, jr.bad == 1 ? "y" : "ies");
		j->from_state = 1;
		j->journal_entry = jr.entry;
		j->journal_entry_len = jr.entry_len;
		j->journal_bad = jr.bad;
		snprintf(j->journal_why, sizeof(j->journal_why), "%s", jr.why);
		/* Entries of an earlier version (each against the one before):
		 * fold them into fabric.snap once, so that the journal from
		 * here on is made of entries against it. */
		j->persist = jr.chained;
	} else {
		*none = 1;
		free(j);
		return NULL;
	}
	j->snap = s;
	return j;
bad:
	free(j);
	return NULL;
}

struct reload_ctx {
	const struct options *o;
	struct builder *b;
	const char *state_dir; /* the first plane's */
};

static int do_reload(void *arg, const char *path, int force, char err[SNAP_ERR_LEN])
{
	struct reload_ctx *r = arg;
	int none;
	struct ingest_job *j;
	if (path) {
		/* admin `restore PATH [force]`: a snapshot file the operator names. */
		struct snap *s;
		if (snap_read_file(path, &s, err))
			return -1;
		j = calloc(1, sizeof(*j));
		if (!j) {
			snap_free(s);
			snprintf(err, SNAP_ERR_LEN, "out of memory");
			return -1;
		}
		j->snap = s;
		j->persist = 1;
		j->force = force;
		j->confirmed = 1;
		snprintf(j->source, sizeof(j->source), "admin restore %.80s", path);
	} else if (!(j = startup_job(r->o, 1, r->state_dir, builder_state_file(r->b), err, &none))) {
		if (none)
			snprintf(err, SNAP_ERR_LEN, "nothing to reload: no --load, --topology or state file");
		return -1;
	}
	builder_submit(r->b, j);
	return 0;
}

/*
 * The state directory decides what topod serves after a restart: one that
 * another user may write to could be used to plant a rolled-back snapshot
 * (or, with a symlink, to make topod overwrite a file). Refuse it, as
 * OpenSSH refuses a group-writable ~/.ssh. Also clears temporary files an
 * interrupted write left behind.
 */
static int check_state_dir(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: state directory %s: %s\n", prog, dir, errno ? strerror(errno) : "not a directory");
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		fprintf(stderr, "%s: state directory %s belongs to uid %u, not to topod's user (%u) or root\n", prog, dir,
			(unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		fprintf(stderr, "%s: state directory %s is writable by %s (mode %03o): chmod go-w %s\n", prog, dir,
			st.st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st.st_mode & 0777), dir);
		return -1;
	}
	char path[4096], err[SNAP_ERR_LEN];
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	int n = snap_remove_stale_tmp(path, err);
	if (n > 0)
		tlog(TLOG_INFO, "removed %d temporary file(s) an interrupted write left in %s", n, dir);
	else if (n < 0)
		tlog(TLOG_WARN, "cannot clear temporary files: %s", err);
	return 0;
}

/* Descriptors kept back from --max-conns: listeners, ingest and admin
 * connections, the state file, the log, libevent's own. */
#define FD_RESERVE 256

/*
 * Job start: thousands of ranks connect at once, so topod raises its
 * descriptor soft limit to the hard limit (as Redis does) and, unless told
 * otherwise, serves as many query connections as that allows. Logs what it
 * chose and why.
 */
static void size_connections(struct options *o, int explicit_conns)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	rlim_t want = rl.rlim_max;
	if (rl.rlim_cur < want) {
		struct rlimit nl = { want, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
			rl.rlim_cur = want;
	}
	unsigned long long avail = rl.rlim_cur > FD_RESERVE ? rl.rlim_cur - FD_RESERVE : 1;
	if (avail > 1000000)
		avail = 1000000;
	if (!explicit_conns) {
		o->srv.max_conns = (unsigned)avail;
		tlog(avail >= 10000 ? TLOG_INFO : TLOG_WARN,
		     "max-conns %u: descriptor limit %llu (hard %llu), %d kept for listeners, ingest and files%s",
		     o->srv.max_conns, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, FD_RESERVE,
		     avail >= 10000 ? "" : "; raise the hard limit (LimitNOFILE=) to serve 10,000 clients at once");
	} else if (o->srv.max_conns > avail) {
		tlog(TLOG_WARN, "--max-conns %u is more than the descriptor limit %llu allows: using %llu",
		     o->srv.max_conns, (unsigned long long)rl.rlim_cur, avail);
		o->srv.max_conns = (unsigned)avail;
	}
}

static void notify_systemd(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t l = strlen(path);
	if (l >= sizeof(sun.sun_path))
		return;
	memcpy(sun.sun_path, path, l);
	if (sun.sun_path[0] == '@')
		sun.sun_path[0] = '\0'; /* abstract namespace */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sun,
	       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l));
	close(fd);
}

/* Long enough for DIR/plane.NAME under any state directory path. */
#define PLANE_DIR_MAX 4200

/* A step's "no exit yet": every exit status is >= 0. */
#define GO_ON (-1)

static void set_defaults(struct options *o)
{
	o->srv.max_conns = 0; /* size_connections() */
	o->srv.max_admin = 16;
	o->http.max_conns = HTTP_DEFAULT_CONNS;
	o->http.timeout_s = HTTP_DEFAULT_TIMEOUT;
	o->http.per_peer = HTTP_DEFAULT_PER_PEER;
	o->http.header_timeout_s = HTTP_DEFAULT_HEADER_TIMEOUT;
	o->http.body_timeout_s = HTTP_DEFAULT_BODY_TIMEOUT;
	o->http.max_reply = HTTP_DEFAULT_MAX_REPLY;
	o->srv.idle_timeout_s = 300;
	/* A 3,456-host pathmatrix is ~27 MB and the largest answer within the
	 * protocol's limits a few hundred MB: the hard limit refuses only what
	 * no real job asks for. The soft limit and the write timeout catch the
	 * client that asks and never reads; the budget keeps a crowd of them
	 * from holding more than that in all. */
	o->srv.out_hard = 512ull << 20;
	o->srv.out_soft = 32ull << 20;
	o->srv.out_soft_s = 20;
	o->srv.write_timeout_s = 30;
	o->srv.out_budget = 256ull << 20;
	o->srv.heavy_queue = 256;
	/* The largest subnet that fits the LID space (49,151 unicast LIDs),
	 * a k=56 fat tree, encodes to ~185 MB, nearly all of it LFTs (3,920
	 * switches x 48K entries). 512 MiB allows ~10,000 switches with full
	 * tables, 2.5x that; the format's own limit (8 GiB) only bounds
	 * arithmetic. And memory follows the bytes that arrive, not this. */
	o->srv.max_snapshot = 512ull << 20;
	/* 100 reroutes of k=24 as deltas fit in a few MB; the byte bound is
	 * for fabrics whose node set keeps changing (whole copies). */
	o->history = 100;
	o->history_bytes = 128ull << 20;
	/* "Most" of the fabric: an SM that lost its port sees one node, a
	 * leaf switch that failed takes a few percent. Three more generations
	 * that agree: a collector's loop, or OpenSM rerouting as the fabric
	 * settles; OpenSM that routes once waits for the operator. */
	o->shrink_guard = 0.5;
	o->shrink_agree = 3;
	o->srv.max_ingest = 8;
	o->srv.ingest_timeout_s = 120;
	/* Under shadow paging memory left alone for a minute is 20-100x
	 * slower to touch again (util_touch); reading the served generation
	 * at k=56 (~220 MB) takes 5-30 ms, so every 5 s is at most 0.6 % of
	 * a core, at the preparation thread's priority. */
	o->warm_s = 5;
	/* A heavy request runs a minute at most: the longest within the
	 * protocol's limits (a 1,024-rank route schedule) takes ~55 s on 2
	 * cores, the others seconds. 1 GiB of client buffers is 4,000
	 * clients each half-way through the longest request line, or two
	 * at the per-client output limit. */
	o->srv.request_timeout_s = TOPO_HEAVY_TIMEOUT_DEFAULT_S;
	o->srv.client_budget = 1ull << 30;
}

/* --max-request-memory's default: a quarter of the machine's RAM (the rest
 * is the fabric's generations, the clients' budget, ingest and everyone
 * else's), between 256 MiB (the largest request, ~100 MiB, twice) and
 * 16 GiB. */
static void size_request_memory(struct options *o)
{
	if (o->req_mem_set)
		return;
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0, m = ram / 4;
	if (m < (256ull << 20))
		m = 256ull << 20;
	if (m > (16ull << 30))
		m = 16ull << 30;
	o->srv.max_request_mem = m;
	tlog(TLOG_INFO, "max-request-memory %llu MiB: a quarter of %llu MiB of RAM", (unsigned long long)(m >> 20),
	     (unsigned long long)(ram >> 20));
}

/* The table itself, for docs and tests: name, arity, lane (admin, heavy,
 * light), usage, help, the reply's head keys ("-": not described). */
static void print_commands(void)
{
	for (size_t i = 0; i < cmd_count; i++) {
		const struct cmd *k = &cmd_table[i];
		printf("%s\t%d\t%d\t%s\t%s\t%s\t%s\n", k->name, k->min_args, k->max_args,
		       k->flags & CMD_ADMIN ? "admin" : k->flags & CMD_HEAVY ? "heavy" : "light", k->usage, k->help,
		       k->reply ? k->reply : "-");
	}
}

/* The command line, and through -c the config files it names. Returns
 * GO_ON, or the exit status of --help, --version, --commands, --counters
 * or a usage error. */
static int parse_args(int argc, char **argv, struct options *o)
{
	int c;
	while ((c = getopt_long(argc, argv, "l:i:a:d:t:fc:L:vqhV", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'V') {
			printf("topod %s\n", TOPO_VERSION);
			return 0;
		}
		if (c == OPT_COMMANDS) {
			print_commands();
			return 0;
		}
		if (c == OPT_COUNTERS) {
			counters_print(stdout);
			return 0;
		}
		if (c == '?' || apply(o, c, optarg)) {
			/* the error is named above; the 35 lines of options would bury it */
			fprintf(stderr, "(%s --help for the options)\n", prog);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		return 2;
	}
	if (!!o->lfts != !!o->topology && !o->topology) {
		fprintf(stderr, "%s: --lfts needs --topology\n", prog);
		return 2;
	}
	return GO_ON;
}

/* A topod that will refuse every snapshot, or has nowhere to receive one,
 * still starts (it serves its state directory), but says so: "ready" with
 * nothing ever arriving is an afternoon lost. */
static void warn_ingest(const struct options *o)
{
	if (!o->srv.ningest)
		fprintf(stderr, "%s: warning: no --ingest: no snapshot can arrive; %s\n", prog,
			o->state_dir ? "only what the state directory holds is served" : "nothing will be served");
	for (int i = 0; i < o->srv.ningest; i++) {
		if (!strncmp(o->srv.ingest[i], "tcp:", 4) && !o->ingest_key && !o->srv.ingest_insecure)
			fprintf(stderr,
				"%s: warning: --ingest %s without --ingest-key: every snapshot on it will be refused "
				"(give --ingest-key FILE, or --ingest-insecure on a trusted network)\n",
				prog, o->srv.ingest[i]);
	}
}

/* What the options leave open, settled before anything is opened: the
 * default listener, the state directory's safety, who may feed the ingest
 * socket, the ingest key. Returns 0, or -1 after saying why. */
static int settle_options(struct options *o)
{
	if (!o->srv.nlisten)
		o->srv.listen[o->srv.nlisten++] = DEFAULT_LISTEN;
	if (o->state_dir && check_state_dir(o->state_dir))
		return -1;
	/* The ingest socket is 0660 for topod's group: by default that group
	 * is the one whose members may deliver, checked per connection. */
	if (!o->srv.ingest_has_group) {
		o->srv.ingest_gid = getegid();
		o->srv.ingest_has_group = 1;
	}
	if (o->ingest_key) {
		char kerr[SNAP_ERR_LEN];
		if (snap_key_load(o->ingest_key, &o->key, kerr)) {
			fprintf(stderr, "%s: --ingest-key: %s\n", prog, kerr);
			return -1;
		}
		o->srv.ingest_key = &o->key;
	}
	warn_ingest(o);
	return 0;
}

/* Plane p's state directory, store and builder, serving what it served
 * before. dirbuf (PLANE_DIR_MAX bytes) holds a later plane's directory.
 * Returns 0, or -1 after saying why. */
static int open_plane(const struct options *o, int p, const struct route_namemap *map, char *dirbuf,
		      struct store *st, struct server_plane *plane)
{
	char err[SNAP_ERR_LEN];
	/* The first plane keeps the state directory itself, so that a
	 * plane added later leaves what was served before in place. */
	const char *dir = NULL;
	if (o->state_dir && p == 0) {
		dir = o->state_dir;
	} else if (o->state_dir) {
		snprintf(dirbuf, PLANE_DIR_MAX, "%s/plane.%s", o->state_dir, o->plane_name[p]);
		if (mkdir(dirbuf, 0700) && errno != EEXIST) {
			fprintf(stderr, "%s: %s: %s\n", prog, dirbuf, strerror(errno));
			return -1;
		}
		if (check_state_dir(dirbuf))
			return -1;
		dir = dirbuf;
	}
	if (store_init(st)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	struct builder *pb = builder_new(st, dir, o->threads, map);
	if (!pb || builder_set_history(pb, o->history, (size_t)o->history_bytes, dir)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	builder_set_plane(pb, o->plane_name[p]);
	builder_set_guard(pb, o->shrink_guard, o->shrink_agree);
	builder_set_warm(pb, o->warm_s * 1000u, p == 0); /* one plane reads the process's pool */
	*plane = (struct server_plane){ o->plane_name[p], st, pb };
	int none;
	/* Serve the saved fabric before we listen: a restarted topod
	 * must never answer "no fabric" when it had one. */
	struct ingest_job *j = startup_job(o, p == 0, dir, builder_state_file(pb), err, &none);
	if (!j && !none) {
		fprintf(stderr, "%s: plane %s: %s\n", prog, o->plane_name[p], err);
		return -1;
	}
	if (j && builder_run(pb, j)) {
		struct builder_stats bs;
		builder_get_stats(pb, &bs);
		fprintf(stderr, "%s: plane %s: cannot serve the start-up fabric: %s\n", prog, o->plane_name[p],
			bs.last_error[0] ? bs.last_error : "see the log");
		return -1;
	}
	int nh = history_load(builder_history(pb));
	if (nh > 0)
		tlog(TLOG_INFO, "plane %s: %d earlier generations in the history", o->plane_name[p], nh);
	return 0;
}

/* After binding: detach, write the pidfile, start the builder threads.
 * Returns 0, or -1 after saying why. */
static int go_live(const struct options *o, const struct server_plane *planes)
{
	if (!o->foreground) {
		/* Detach only after binding, so that a bad address fails the
		 * command that started us rather than a child nobody watches. */
		/* nochdir: relative paths given on the command line (state
		 * directory, pidfile, sockets removed at exit) stay valid. */
		if (daemon(1, 1)) {
			fprintf(stderr, "%s: daemon: %s\n", prog, strerror(errno));
			return -1;
		}
	}
	if (o->pidfile) {
		FILE *pf = fopen(o->pidfile, "w");
		if (pf) {
			fprintf(pf, "%ld\n", (long)getpid());
			fclose(pf);
		}
	}
	for (int p = 0; p < o->nplanes; p++)
		if (builder_start(planes[p].b)) {
			fprintf(stderr, "%s: cannot start the builder thread\n", prog);
			return -1;
		}
	return 0;
}

static void teardown(struct options *o, struct server *srv, struct http *http, struct server_plane *planes,
		     struct route_namemap *map)
{
	for (int p = 0; p < o->nplanes; p++)
		builder_stop(planes[p].b);
	http_free(http);
	server_free(srv);
	for (int p = 0; p < o->nplanes; p++) {
		builder_free(planes[p].b);
		store_destroy(planes[p].st);
	}
	route_namemap_free(map);
	if (o->pidfile)
		unlink(o->pidfile);
	for (int i = 0; i < o->nowned; i++)
		free(o->owned[i]);
	tlog(TLOG_INFO, "stopped");
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	set_defaults(&o);
	int rc = parse_args(argc, argv, &o);
	if (rc != GO_ON)
		return rc;
	if (settle_options(&o))
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* Each generation allocates and frees what it does not share with
	 * the one it replaces (the touched tables' chunk lists, the index's
	 * re-pointed arrays, the history's reverse deltas): keep freed heap
	 * pages mapped for the next one instead of trimming them and
	 * faulting fresh ones in. The tables' chunks have a pool of their
	 * own (snapshot/lft.c); whole snapshots (received bytes, 1 MB and
	 * up) are mapped apart and go back to the system. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	size_connections(&o, o.srv.max_conns != 0);
	size_request_memory(&o);
	o.srv.threads = o.threads > 0 ? o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (o.srv.threads < 1)
		o.srv.threads = 1;

	char err[SNAP_ERR_LEN];
	struct route_namemap *map = NULL;
	if (o.namemap && route_namemap_load(o.namemap, &map, err)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	if (!o.nplanes)
		snprintf(o.plane_name[o.nplanes++], sizeof(o.plane_name[0]), "default");
	struct server_plane planes[TOPO_PLANES_MAX];
	struct store stores[TOPO_PLANES_MAX];
	char dirs[TOPO_PLANES_MAX][PLANE_DIR_MAX];
	for (int p = 0; p < o.nplanes; p++)
		if (open_plane(&o, p, map, dirs[p], &stores[p], &planes[p]))
			return 1;
	struct server *srv = server_new(&o.srv, planes, o.nplanes, err);
	if (!srv) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	struct http *http = NULL;
	o.http.request_timeout_s = o.srv.request_timeout_s;
	o.http.out_budget = o.srv.out_budget;
	if (o.http.addr && !(http = http_new(&o.http, srv, planes, o.nplanes, err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	struct reload_ctx rctx = { &o, planes[0].b, o.state_dir };
	server_set_reload(srv, do_reload, &rctx);
	if (go_live(&o, planes))
		return 1;
	/* Tests and scripts wait for this line; with port 0 it says which. */
	printf("ready port=%d\n", server_query_port(srv, 0));
	if (http)
		printf("http port=%d\n", http_port(http));
	fflush(stdout);
	tlog(TLOG_INFO, "ready: queries on %s (port %d)", o.srv.listen[0], server_query_port(srv, 0));
	notify_systemd("READY=1");
	rc = server_run(srv);
	notify_systemd("STOPPING=1");
	teardown(&o, srv, http, planes, map);
	return rc ? 1 : 0;
}
