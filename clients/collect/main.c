/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo-collect - build the fabric snapshot with SMPs, for fabrics whose SM
 * cannot load the topod plugin, and hand it to the same sinks the plugin
 * uses.
 *
 *   topo-collect [-C ca] [-P port] [-t ms] [-r n] [-w n] [-y mkey] [-o FILE]
 *                [--loop SECONDS [--changed-only]] [-v]
 *                [sink=unix:PATH] [sink=tcp:HOST:PORT] [spool=DIR] [timeout_ms=N] ...
 *
 * Exit status: 0 success, 1 failure, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "sink.h"
#include "smpq.h"
#include "snapshot.h"
#include "util.h"

#define PROG "topo-collect"
#define DEFAULT_TIMEOUT_MS 1000  /* libibmad's default for one SMP */
#define DEFAULT_RETRIES 3
/* 16 in flight: on the simulated 3,456-host fat tree that is 5x faster than
 * 1 and no slower than 64. LFT reads go block-major, so 16 in flight means
 * about one per switch; discovery is libibnetdisc's BFS, which can put more
 * on one switch (its own default is 2, OpenSM's 4): lower -w if a fabric's
 * SMAs drop SMPs. */
#define DEFAULT_WINDOW 16
#define LOOP_MAX_S 86400
#define SINK_OPTS_MAX 4096       /* all key=value tokens joined */
#define RETRY_FIRST_MS 200

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [options] [key=value ...]\n"
		"Discovers the InfiniBand fabric with SMPs, reads every switch's LFT and\n"
		"writes a topod snapshot to FILE and/or delivers it to topod.\n"
		"\n"
		"  -C, --Ca CA          CA to use (default: the first one)\n"
		"  -P, --Port PORT      CA port to use (default: the first active one)\n"
		"  -t, --timeout MS     timeout of one SMP attempt (default %d)\n"
		"  -r, --retries N      further attempts after a timeout (default %d)\n"
		"  -w, --window N       SMPs in flight at once, 1..%d (default %d)\n"
		"  -y, --m_key KEY      M_Key to put in every SMP (default 0)\n"
		"  -o, --output FILE    write the snapshot to FILE (atomically)\n"
		"  -l, --loop SECONDS   collect again every SECONDS until SIGINT/SIGTERM\n"
		"      --changed-only   with --loop: write and deliver only when the fabric\n"
		"                       changed (or a previous delivery failed)\n"
		"  -v, --verbose        counts and timings on stderr\n"
		"  -h, --help           this text\n"
		"  -V, --version        the version\n"
		"\n"
		"key=value, as in the OpenSM plugin's options:\n"
		"  sink=unix:PATH  sink=tcp:HOST:PORT  spool=DIR  (each repeatable)\n"
		"  timeout_ms=N  backoff_max_ms=N  linger_ms=N    (delivery, not SMPs)\n",
		DEFAULT_TIMEOUT_MS, DEFAULT_RETRIES, SMPQ_WINDOW_MAX, DEFAULT_WINDOW);
}

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static double sec(uint64_t us)
{
	return (double)us / 1e6;
}

/* Sleeps ms, or less if a stop signal arrives. */
static void nap(uint64_t ms)
{
	uint64_t end = (uint64_t)util_now_ms() + ms;
	while (!stop) {
		uint64_t now = (uint64_t)util_now_ms();
		if (now >= end)
			break;
		uint64_t left = end - now;
		struct timespec ts = { (time_t)(left / 1000), (long)(left % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
}

struct out {
	const char *file;
	struct sink_opts so;
	int pending[SINK_MAX];   /* 1: this sink has not got the current snapshot */
	int file_pending;
};

/*
 * Gives the encoded snapshot to every pending sink, retrying failures with
 * doubling waits until linger_ms has passed since the first attempt, as the
 * plugin does at shutdown. Returns the number of sinks still pending.
 */
static int deliver(struct out *o, const uint8_t *buf, size_t len, uint64_t gen, int verbose)
{
	uint64_t give_up = (uint64_t)util_now_ms() + o->so.linger_ms;
	unsigned backoff = RETRY_FIRST_MS;
	char err[SNAP_ERR_LEN], name[SINK_ADDR_LEN + 16];
	for (;;) {
		int left = 0;
		for (int i = 0; i < o->so.nsinks; i++) {
			if (!o->pending[i])
				continue;
			sink_describe(&o->so.sinks[i], name, sizeof(name));
			if (sink_deliver(&o->so.sinks[i], buf, len, o->so.timeout_ms, err) == 0) {
				o->pending[i] = 0;
				if (verbose)
					msg("delivered generation %llu to %s", (unsigned long long)gen, name);
				continue;
			}
			left++;
			if ((uint64_t)util_now_ms() + backoff >= give_up || stop)
				msg("deliver: %s", err); /* err starts with the sink's name */
		}
		if (!left || stop || (uint64_t)util_now_ms() + backoff >= give_up)
			return left;
		nap(backoff);
		backoff = backoff * 2 > o->so.backoff_max_ms ? o->so.backoff_max_ms : backoff * 2;
	}
}

/*
 * One collection, validated. Errors are printed here; returns 0 and a new
 * snapshot in *out (caller frees with snap_free()), or -1.
 */
static int collect_once(const struct collect_cfg *cfg, int verbose, struct snap **out)
{
	char err[SNAP_ERR_LEN];
	struct collect_stats st;
	struct snap *s;
	if (collect_fabric(cfg, &s, &st, err)) {
		if (!stop)
			msg("collect: %s", err);
		return -1;
	}
	if (snap_validate(s, err)) {
		/* topod would refuse it anyway; say why here, where the operator
		 * is looking. */
		msg("fabric is inconsistent: %s", err);
		snap_free(s);
		return -1;
	}
	if (verbose) {
		msg("%u nodes (%u switches), %u links, max LID %u; sm_guid 0x%016llx from %s", st.nodes,
		    st.switches, st.links, st.max_lid, (unsigned long long)s->sm_guid, st.sm_from);
		msg("discovery %.3f s (%u MADs), LFTs %.3f s (%llu blocks, %llu SMPs, %llu retried), "
		    "assembly %.3f s, window %u",
		    sec(st.discover_us), st.discover_mads, sec(st.lft_us), (unsigned long long)st.lft_blocks,
		    (unsigned long long)st.smp.sent, (unsigned long long)st.smp.retried, sec(st.build_us),
		    cfg->window);
	}
	*out = s;
	return 0;
}

/*
 * collect_once() in a child process, the snapshot coming back encoded over
 * a pipe. libibnetdisc 44 leaks 64 bytes per switch port per discovery
 * (fixed upstream by rdma-core commit 5814d7842): about 1 MB per run on a
 * 3,456-host fabric, which a --loop running for months cannot carry. The
 * child takes the leak with it when it exits.
 */
static int collect_isolated(const struct collect_cfg *cfg, int verbose, struct snap **out)
{
	char err[SNAP_ERR_LEN];
	int fds[2];
	if (pipe2(fds, O_CLOEXEC)) {
		msg("pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL); /* the child exit()s, which would flush our buffers twice */
	pid_t pid = fork();
	if (pid < 0) {
		msg("fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		/* exit(), not _exit(): atexit handlers must run, e.g. umad2sim's,
		 * which hands the simulator back its client slot (ibsim has 10). */
		/* A Ctrl-C reaches the whole process group: die with it. */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		close(fds[0]);
		struct snap *s;
		uint8_t *buf;
		size_t len;
		if (collect_once(cfg, verbose, &s))
			exit(1);
		if (snap_encode(s, &buf, &len, err)) {
			msg("encode: %s", err);
			exit(1);
		}
		for (size_t off = 0; off < len;) {
			ssize_t w = write(fds[1], buf + off, len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				exit(1); /* the parent is gone */
			off += (size_t)w;
		}
		exit(0);
	}
	close(fds[1]);
	/* The child is ours and validated what it sends, but a bound costs
	 * nothing: never buffer more than a snapshot may hold. */
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf = malloc(cap);
	int rc = buf ? 0 : -1;
	while (rc == 0) {
		if (len == cap) {
			uint8_t *nb = cap < SNAP_MAX_PAYLOAD + SNAP_HEADER_LEN ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				rc = -1;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fds[0], buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue; /* a stop signal: let the child finish its run */
		if (r <= 0) {
			rc = r < 0 ? -1 : 0;
			break;
		}
		len += (size_t)r;
	}
	close(fds[0]);
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		/* It said why on stderr, unless a signal ended it. */
		if (WIFSIGNALED(ws) && !stop)
			msg("collect: collector process killed by signal %d", WTERMSIG(ws));
		free(buf);
		return -1;
	}
	if (rc || snap_decode(buf, len, out, err)) {
		msg("collect: reading the collector process's snapshot: %s",
		    rc ? "out of memory or read error" : err);
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

/* Refuses to let the atomic rename replace a device node such as /dev/null. */
static int check_output(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		msg("%s: exists and is not a regular file", path);
		return -1;
	}
	return 0;
}

/* Everything a run of topo-collect keeps from the command line to the last
 * round. */
struct run {
	struct collect_cfg cfg;
	struct out o;
	unsigned long loop_s;     /* 0: one round */
	int verbose, changed_only;
	int status;               /* how the last round that got this far went */
	uint64_t gen, sweep;
	struct snap *prev;        /* the last round's fabric, for --changed-only */
};

/* A step's "no exit yet": every exit status is >= 0. */
#define GO_ON (-1)

/* The options before the key=value words. Returns GO_ON, or the exit
 * status of --help or a usage error. */
static int parse_options(int argc, char **argv, struct run *r)
{
	static const struct option longopts[] = {
		{ "Ca", required_argument, NULL, 'C' },
		{ "Port", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 't' },
		{ "retries", required_argument, NULL, 'r' },
		{ "window", required_argument, NULL, 'w' },
		{ "m_key", required_argument, NULL, 'y' },
		{ "output", required_argument, NULL, 'o' },
		{ "loop", required_argument, NULL, 'l' },
		{ "changed-only", no_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	opterr = 0; /* getopt's own messages would start with argv[0], not PROG */
	while ((c = getopt_long(argc, argv, ":C:P:t:r:w:y:o:l:vhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'C':
			r->cfg.ca = optarg;
			break;
		case 'P':
			if (parse_uint(optarg, 1, 254, &v))
				goto bad_arg;
			r->cfg.port = (int)v;
			break;
		case 't':
			if (parse_uint(optarg, 1, 60000, &v))
				goto bad_arg;
			r->cfg.timeout_ms = (unsigned)v;
			break;
		case 'r':
			if (parse_uint(optarg, 0, 20, &v))
				goto bad_arg;
			r->cfg.retries = (unsigned)v;
			break;
		case 'w':
			if (parse_uint(optarg, 1, SMPQ_WINDOW_MAX, &v))
				goto bad_arg;
			r->cfg.window = (unsigned)v;
			break;
		case 'y': {
			char *end;
			errno = 0;
			r->cfg.mkey = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-')
				goto bad_arg;
			break;
		}
		case 'o':
			r->o.file = optarg;
			break;
		case 'l':
			if (parse_uint(optarg, 1, LOOP_MAX_S, &r->loop_s))
				goto bad_arg;
			break;
		case 'c':
			r->changed_only = 1;
			break;
		case 'v':
			r->verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " %s\n", TOPO_VERSION);
			return 0;
		case ':':
			msg("%s: needs an argument", argv[optind - 1]);
			return 2;
		default:
			/* optopt names a bad short option even inside "-vx";
			 * a bad long option leaves it 0. */
			if (optopt)
				msg("-%c: unknown option (see " PROG " --help)", optopt);
			else
				msg("%s: unknown option (see " PROG " --help)", argv[optind - 1]);
			return 2;
		}
		continue;
bad_arg:
		msg("-%c %s: out of range or not a number", c, optarg);
		return 2;
	}
	return GO_ON;
}

/* The key=value words (sinks, spools, delivery timing) and the checks that
 * need every option. Returns GO_ON or the usage exit status. */
static int setup_outputs(int argc, char **argv, struct run *r)
{
	/* The plugin takes its options as one whitespace-separated line; join
	 * ours the same way so that both share sink_parse_options(). */
	char opts[SINK_OPTS_MAX];
	size_t ol = 0;
	opts[0] = '\0';
	for (int i = optind; i < argc; i++) {
		size_t l = strlen(argv[i]);
		if (!strchr(argv[i], '=') || strpbrk(argv[i], " \t\r\n")) {
			msg("%s: expected key=value without spaces", argv[i]);
			return 2;
		}
		if (ol + l + 2 > sizeof(opts)) {
			msg("key=value options longer than %d bytes", SINK_OPTS_MAX);
			return 2;
		}
		memcpy(opts + ol, argv[i], l);
		ol += l;
		opts[ol++] = ' ';
		opts[ol] = '\0';
	}
	char err[SNAP_ERR_LEN];
	if (sink_parse_options(opts, &r->o.so, err)) {
		msg("%s", err);
		return 2;
	}
	if (!r->o.file && r->o.so.nsinks == 0) {
		msg("nothing to do: give -o FILE, sink=... or spool=...");
		usage(stderr);
		return 2;
	}
	if (r->changed_only && !r->loop_s) {
		msg("--changed-only needs --loop");
		return 2;
	}
	if (r->o.file && check_output(r->o.file))
		return 2;
	return GO_ON;
}

/* Encodes s once for the file and every sink still pending. Returns -1 if
 * it cannot be encoded; a failed write or delivery only sets the status. */
static int send_round(struct run *r, const struct snap *s)
{
	char err[SNAP_ERR_LEN];
	uint8_t *buf;
	size_t len;
	if (snap_encode(s, &buf, &len, err)) {
		msg("encode: %s", err);
		return -1;
	}
	r->status = 0;
	if (r->o.file_pending) {
		if (snap_write_atomic(r->o.file, buf, len, err)) {
			msg("%s", err);
			r->status = 1;
		} else {
			r->o.file_pending = 0;
			if (r->verbose)
				msg("wrote generation %llu to %s (%zu bytes)", (unsigned long long)r->gen, r->o.file,
				    len);
		}
	}
	if (deliver(&r->o, buf, len, r->gen, r->verbose))
		r->status = 1;
	free(buf);
	return 0;
}

/* One collection, stamped and sent where it is due. Returns 0 when the
 * round went through (it becomes the previous fabric), -1 when it
 * stopped early. */
static int collect_round(struct run *r)
{
	struct snap *s = NULL;
	if ((r->loop_s ? collect_isolated(&r->cfg, r->verbose, &s) : collect_once(&r->cfg, r->verbose, &s))) {
		r->status = 1;
		return -1;
	}
	/* Wall-clock microseconds: a restarted collector never goes back
	 * below the generations a previous run delivered. */
	uint64_t now = snap_now_us();
	r->gen = now > r->gen ? now : r->gen + 1;
	s->generation = r->gen;
	s->sweep = ++r->sweep;
	s->timestamp = now;
	int changed = !r->prev || !collect_same_fabric(r->prev, s);
	if (changed || !r->changed_only) {
		for (int i = 0; i < r->o.so.nsinks; i++)
			r->o.pending[i] = 1;
		r->o.file_pending = r->o.file != NULL;
	} else if (r->verbose) {
		msg("fabric unchanged");
	}
	int need = r->o.file_pending;
	for (int i = 0; i < r->o.so.nsinks; i++)
		need |= r->o.pending[i];
	if (need && send_round(r, s)) {
		snap_free(s);
		r->status = 1;
		return -1;
	}
	snap_free(r->prev);
	r->prev = s;
	return 0;
}

int main(int argc, char **argv)
{
	struct run r;
	memset(&r, 0, sizeof(r));
	r.cfg = (struct collect_cfg){ NULL, 0, DEFAULT_TIMEOUT_MS, DEFAULT_RETRIES, DEFAULT_WINDOW, 0 };
	int rc;
	if ((rc = parse_options(argc, argv, &r)) != GO_ON)
		return rc;
	if ((rc = setup_outputs(argc, argv, &r)) != GO_ON)
		return rc;

	if (r.loop_s) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}

	do {
		uint64_t start = (uint64_t)util_now_ms();
		if (collect_round(&r) == 0 && r.verbose)
			msg("total %.3f s", (double)((uint64_t)util_now_ms() - start) / 1e3);
		if (r.loop_s && !stop) {
			uint64_t spent = (uint64_t)util_now_ms() - start;
			if (spent < r.loop_s * 1000)
				nap(r.loop_s * 1000 - spent);
		}
	} while (r.loop_s && !stop);

	snap_free(r.prev);
	/* A stop request ends a loop normally; a one-shot run reports how its only attempt went. */
	return r.loop_s ? 0 : r.status;
}
