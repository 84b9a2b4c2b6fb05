/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topoquery - ask topod about the InfiniBand fabric, from a shell.
 *
 *   topoquery [-s ADDR:PORT[,ADDR:PORT...]] [--json] [--timeout MS] COMMAND ...
 *
 * Talks to topod only through libtii (tii.h). Options may come before or
 * after the command; "--" ends them. Host lists are command-line words and
 * the hosts of -f FILE, each word a host or a Slurm hostlist expression
 * ("c401-[101-118,120]"; commas separate names).
 *
 * Output formats (stable; text is space-separated fields, one record per
 * line; --json prints one JSON object on one line). GUIDs and cluster IDs
 * are "0x" + 16 lowercase hex digits everywhere. Switch names are printed
 * as topod reports them; in text, bytes outside printable ASCII, '"' and
 * '\' appear as \xHH; in JSON, as \u00XX.
 *
 * info      text: "key value" lines: server, generation, nodes, switches,
 *           cas, links, hosts, max_lid, depth ("-" if unknown), engine,
 *           sm_guid, sweep, snapshot_us, received_us, source.
 *           json: {"server":S,"generation":G,"nodes":N,"switches":N,"cas":N,
 *           "links":N,"hosts":N,"max_lid":N,"depth":D|null,"engine":S,
 *           "sm_guid":"0x..","sweep":N,"snapshot_us":N,"received_us":N,
 *           "source":S}
 * hops A B  text: the hop count alone ("2").
 *           json: {"src":A,"dst":B,"hops":N,"generation":G}
 * path A B  text: "A B HOPS" then one line per switch in route order:
 *           "GUID IN_PORT OUT_PORT NAME" (NAME is the rest of the line).
 *           json: {"src":A,"dst":B,"hops":N,"switches":[{"guid":"0x..",
 *           "name":S},...]} exactly, switches in route order.
 * depth     text: the depth alone. json: {"depth":D,"generation":G}
 * tree      text: one line per cluster and host, indented two spaces per
 *           level below its parent, roots first in topod's order:
 *           "cluster ID level=L dist=D hosts=K" / "host NAME".
 *           --format dot (or -o FILE.svg|.png|.pdf): nested boxes for
 *           graphviz, clusters in clusters, hosts in their leaf (picture.c).
 *           json: {"generation":G,"depth":D,"clusters":[{"id":ID,
 *           "parent":ID|null,"level":L,"dist":D,"hosts":K},...] (children
 *           first),"hosts":[{"name":NAME,"parent":ID},...]}
 * clusters [LEVEL] HOSTS...   (or -L LEVEL; without a level: every level)
 *           text: per level a line "level L clusters C", then per host
 *           "HOST ID COLOR" (COLOR: dense 0..C-1 in ID order, usable as an
 *           MPI_Comm_split colour). A first word that is a number is LEVEL
 *           when hosts follow it (or come from -f).
 *           json: {"generation":G,"depth":D,"levels":[{"level":L,"count":C,
 *           "hosts":[{"host":H,"cluster":ID,"color":K},...]},...]}
 * matrix HOSTS...
 *           text: one row per host: "HOST h1 ... hn", hops to each host in
 *           argument order, "-" where the route fails.
 *           json: {"generation":G,"hosts":[H,...],"hops":[[..],..]} with
 *           null where the route fails.
 * shared [--loads] HOSTS...
 *           text: "hosts N", "leaves L", "avg_hosts_per_leaf X",
 *           "pairs_ok N", "pairs_failed N", "sharing K H...", then per shared
 *           link "group GUID:PORT H...", and with --loads per loaded link
 *           "load GUID:PORT COUNT".
 *           json: {"generation":G,"hosts":N,"leaves":L,
 *           "avg_hosts_per_leaf":X,"pairs_ok":N,"pairs_failed":N,
 *           "num_sharing":K,"sharing":[H,...],"groups":[{"switch":GUID,
 *           "port":P,"hosts":[H,...]},...]} plus "loads":[{"node":GUID,
 *           "port":P,"count":N},...] with --loads.
 * simgrid [-o FILE] HOSTS...
 *           a SimGrid platform (XML) of HOSTS, clients/topoquery/simgrid.c.
 * slurm [-o FILE]
 *           a topology.conf for Slurm's topology/tree: comment lines, then
 *           per cluster, children first, "SwitchName=sL_ID Nodes=HOSTLIST"
 *           (clusters holding hosts) or "SwitchName=sL_ID Switches=A,B,..."
 *           (L = level, ID = 16 hex digits). Each root is the top of one
 *           tree (one per disconnected part of the fabric). A cluster with
 *           both hosts and clusters below it gets an extra switch
 *           "sL_ID_hosts" holding its hosts. Host lists use Slurm's
 *           compressed form, e.g. c401-[101-118].
 * order [--format F] [--slots N] HOSTS...
 *           the hosts in hierarchy order (a leaf's hosts together, a pod's
 *           leaves together). --format: list (default; one host per line),
 *           slurm (SLURM_HOSTFILE: each host N times), openmpi ("HOST
 *           slots=N"), rankfile ("rank R=HOST slot=K"), mpich ("HOST:N"),
 *           hostlist (one compressed list). json: {"generation":G,
 *           "hosts":[H,...]}
 * pick N [--format F] [--slots S] FREEHOSTS...
 *           N hosts chosen among the free ones: no link sharing above the
 *           leaf where possible, then fewest leaves and pods. text: "key
 *           value" lines picked, free, sharing_free, sharing, leaves, pods,
 *           max_hops, max_load, nodelist (compressed hostlist); --format
 *           as order. json: {"generation":G,"picked":N,"free":F,
 *           "sharing_free":B,"sharing":S,"leaves":L,"pods":P,"max_hops":H,
 *           "max_load":M,"hosts":[H,...]}
 * pick trade N [--format F] ALLOCATION... FREEHOSTS...
 *           the first N hosts are an allocation; those to trade within its
 *           leaves for free ones, and the predicted gain (man topoquery).
 * pick pattern=P N [--format F] FREEHOSTS...
 *           pick judged by a pattern load takes (man topoquery).
 * pick leaves=any|fewest|auto N [--format F] FREEHOSTS...
 *           any (the default): more leaves than the fewest when predicted
 *           faster; auto: only if the fewest are slower than random picks;
 *           widened, wider_leaves, wider_time_us (man topoquery).
 * pick run=bound|route|xor|MODEL [bytes=B] N [--format F] FREEHOSTS...
 *           every candidate judged by the all-to-all the job runs at B
 *           bytes a block (libtii 1.8, tii_set_pick_run; man topoquery).
 * map GRAPH [--format F] [--slots S] HOSTS[*SLOTS]...
 *           ranks of GRAPH (stencil:X[xY[xZ]][:periodic], or a METIS or
 *           Scotch graph file) onto the hosts. text: "key value" lines
 *           ranks, hosts, method (scotch, or block when Scotch did worse),
 *           moved, hop_bytes, max_load, block_hop_bytes, block_max_load,
 *           rr_hop_bytes, rr_max_load, then "rank R HOST" per rank.
 *           --format list or slurm: line R is rank R's host (SLURM_HOSTFILE);
 *           rankfile: "rank R=HOST slot=K". json: {"generation":G,
 *           "ranks":R,"hosts":H,"method":M,"moved":K,"hop_bytes":B,
 *           "max_load":L,"block":{"hop_bytes":B,"max_load":L},
 *           "round_robin":{...},"rank_host":[H,...]}
 *
 * load [--bytes N] [--links] [--matrix FILE] [--plot FILE] [--dot FILE] PATTERN RANKS...
 *           RANKS: HOST (one rank per host of a hostlist) or HOST*N (N ranks).
 *           text: "key value" lines (generation pattern ranks hosts flows
 *           msgs bytes intra_msgs intra_bytes failed_msgs failed_bytes
 *           max_msgs max_bytes max_hops), then "tier F>T links=N used=U
 *           max_msgs=M max_bytes=B total_msgs=M total_bytes=B bound_msgs=X
 *           bound_bytes=Y" (X, Y "-" where undefined), "hops H msgs=M
 *           bytes=B", "max GUID:PORT F>T msgs=M bytes=B behind=H,H..|-", and
 *           with --links "link GUID:PORT F>T MSGS BYTES HEADGUID".
 *           json: {"generation":G,"pattern":S,"ranks":N,...,"tiers":[..],
 *           "hops":[..],"max":[..],"links":[..]} (bound null where undefined).
 *           --plot: the hierarchy with links by load (gnuplot; .svg, .png, .pdf).
 *
 * show NAME text: "key value" lines name, kind, plane, host, leaf NAME GUID,
 *           leaf_cluster, pod; per node "node GUID TYPE "NAME" ports N", per
 *           port "  port P guid GUID lid L ==( 4X QDR Active )==> PEERGUID
 *           PEERPORT "NAME" TYPE" ("==( Down )==> -" with nothing cabled).
 *           json: topoquery(1).
 * links [--down|--state S] [NAME]
 *           text: per cable "GUID PORT "NAME" ==( 4X QDR Active )==> GUID
 *           PORT "NAME"" (iblinkinfo's words). json: topoquery(1).
 * hosts     text: "HOST rails=K HCA PORTGUID lid=L ..." per host.
 * resolve NAME  text: "key value" lines; json: one object.
 *
 * Errors go to stderr as "topoquery: what: why"; the exit status says
 * which kind (topoquery.h: 1 not found, 2 usage, 3 timeout, 4 no server,
 * 5 other).
 */
#include <inttypes.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topoquery.h"
#include "util.h"

static const char usage_text[] =
	"usage: topoquery [OPTIONS] COMMAND [ARGS]\n"
	"       topoquery help [COMMAND] | COMMAND --help\n"
	"\n"
	"Commands:\n"
	"  info                      fabric counts and the generation served\n"
	"  hops A B                  switches traversed from A to B\n"
	"  path A B                  the switches from A to B, with ports and names\n"
	"  depth                     levels of the switch-cluster hierarchy\n"
	"  tree [--format dot]       the whole hierarchy (text, or graphviz)\n"
	"  clusters [LEVEL] HOSTS... each host's cluster ID and colour at LEVEL (all levels\n"
	"                            without one)\n"
	"  matrix HOSTS...           hop counts between every pair of HOSTS;\n"
	"                            --delay[=BYTES]: predicted ns of one BYTES message\n"
	"                            (default 1 MiB): latency + BYTES / slowest cable\n"
	"  shared [--loads] HOSTS... hosts sharing a link above the leaf level\n"
	"  slurm [-o FILE]           a Slurm topology.conf (topology/tree)\n"
	"  load PATTERN RANKS...     link loads of a job's pattern: alltoall, allgather,\n"
	"                            ring, shift:K, xor:K, bitrev, random:SEED,\n"
	"                            stencil2d:X,Y[:periodic],\n"
	"                            stencil3d:X,Y,Z[:periodic], matrix (--matrix FILE);\n"
	"                            RANKS: HOST (one rank) or HOST*N (N ranks)\n"
	"  order HOSTS...            the hosts in hierarchy order (hostfiles: --format)\n"
	"  pick N FREEHOSTS...       choose N: no shared links above the leaf, then compact\n"
	"  pick trade N ALLOC... FREEHOSTS...  an allocation's hosts to trade, and the gain\n"
	"  pick pattern=P N FREEHOSTS...  pick judged by a load pattern (ring, stencil2d:X,Y)\n"
	"  pick leaves=fewest N FREEHOSTS...  the fewest leaves and pods, whatever the cost\n"
	"                            (default any: more leaves when predicted faster)\n"
	"  map GRAPH HOSTS[*SLOTS]   ranks of a stencil:XxYxZ or METIS/Scotch graph onto\n"
	"                            hosts (Scotch); never predicted slower than block\n"
	"  profile REPORT [REPORT2]  print a topoprof report (its .json), or compare two\n"
	"  schedule ALGO [conflicts=N] [sparsity=X] [k=N] [bytes=B] [fallback=0] [window=W|auto]\n"
	"           [native=MODEL] RANKS...\n"
	"                            an all-to-all schedule (xor, tacs1, tacs2, opt,\n"
	"                            route) or allgather (allgather = kPrefix, kshift,\n"
	"                            agring, ring, agbest) for ranks HOST or HOST*N,\n"
	"                            per-step link figures, its predicted time against\n"
	"                            the MPI's own (XOR; ring) and the bound (that one\n"
	"                            instead when predicted slower, unless fallback=0);\n"
	"                            --plot FILE.svg: XOR vs TACS1 vs OPT\n"
	"  history                   the generations topod keeps (time, SM, engine, counts)\n"
	"  planes [HOST]             the fabric planes (subnets) topod serves, or HOST's\n"
	"  watch [--after G] [--count N] [--wait SEC]\n"
	"                            wait for the next generation(s) and print each, with\n"
	"                            the cables that went down and up; exit 3 when none\n"
	"                            comes within SEC (default 3600); reconnects when\n"
	"                            topod restarts (exit 4: no topod for SEC)\n"
	"  diff [--detail] FROM TO [HOSTS...]\n"
	"                            what changed, summed up: cables down and up, nodes,\n"
	"                            ports, how many switches and host pairs changed routes;\n"
	"                            --detail: every record (links, nodes, ports, LFTs, hosts);\n"
	"                            FROM/TO: generation, @UNIX_SECONDS or \"YYYY-MM-DD HH:MM\";\n"
	"                            with HOSTS, every changed pair among them\n"
	"  simgrid [-o FILE] HOSTS... a SimGrid platform of HOSTS: the LFT routes and the\n"
	"                            cables' rates, for smpirun -platform; --all: every\n"
	"                            host of the fabric (at most 4,096 hosts, 256 MiB)\n"
	"  show HOST|HCA|SWITCH      one host, HCA or switch like iblinkinfo: GUIDs, LIDs,\n"
	"                            leaf, pod, plane, each port's neighbour, 4X QDR Active\n"
	"  links [--down|--state S] [NAME]\n"
	"                            every cable once, like iblinkinfo; NAME: a substring of\n"
	"                            either end's name or GUID; S: down, init, armed, active,\n"
	"                            notactive, up\n"
	"  hosts                     every host and its rails (HCA, port GUID, LID)\n"
	"  resolve NAME              what a name means: host, HCA, GUIDs, port, LID, leaf\n"
	"\n"
	"Options:\n"
	"  -s, --server LIST   topod servers ADDR:PORT[,ADDR:PORT...], tried in order\n"
	"                      (default: $TII_SERVERS, else 127.0.0.1:7878)\n"
	"  -j, --json          JSON output (one object on one line)\n"
	"  -t, --timeout MS    per-server timeout (default: $TII_TIMEOUT_MS, else 10000)\n"
	"  -f, --file FILE     read HOSTS from FILE too (\"-\": stdin); blank-separated\n"
	"                      names or Slurm hostlists, \"#\" comments\n"
	"  -L, --level N       clusters: the level (0 = top, top, leaf, -1 = leaf, -2 = the level above)\n"
	"      --plane NAME    ask of this fabric plane (default: the plane the hosts are on;\n"
	"                      slurm: one file or section per plane)\n"
	"      --format FMT    tree: text (default) or dot; order, pick, map: text, list,\n"
	"                      slurm, openmpi, rankfile, mpich, hostlist\n"
	"      --slots N       order, pick, map: ranks per host (default 1)\n"
	"      --loads         shared: also list every link's load\n"
	"  -o, --output FILE   slurm, simgrid: write FILE instead of stdout; tree: draw\n"
	"                      the hierarchy to FILE.svg, .png or .pdf (graphviz)\n"
	"      --bytes N       load: bytes per message (default 1)\n"
	"      --links         load: list every loaded link\n"
	"      --matrix FILE   load matrix: \"SRC DST BYTES\" per line\n"
	"      --plot FILE     schedule: conflicts per step; load: the hierarchy with links\n"
	"                      by load (.svg, .png or .pdf; gnuplot)\n"
	"      --dot FILE      load: write that picture as graphviz DOT\n"
	"      --down          links: only cables with an end below Init (--state down)\n"
	"      --state S       links: down, init, armed, active, notactive or up\n"
	"  -h, --help          this text\n"
	"  -V, --version       the version\n"
	"\n"
	"Hosts: c401-101, c401-101/HCA-2, 0xGUID, lid:N, or a hostlist c401-[101-118].\n"
	"\n"
	"Output (text; --json prints one JSON object on one line):\n"
	"  hops, depth     the number alone\n"
	"  path            \"A B HOPS\", then \"GUID IN_PORT OUT_PORT NAME\" per switch in route order\n"
	"  clusters        \"level L clusters C\", then \"HOST CLUSTER_ID COLOR\" per host\n"
	"  matrix          \"HOST h1 ... hn\" per host, \"-\" where the route fails\n"
	"  tree            \"cluster ID level=L dist=D hosts=K\" / \"host NAME\", indented by level\n"
	"  info, shared    \"key value\" lines; shared adds \"group SWITCH:PORT HOSTS...\" lines\n"
	"  slurm           SwitchName=sLEVEL_ID Nodes=HOSTLIST | Switches=NAMES, children first\n"
	"Exit status: 0 success, 1 the answer is no (unknown name, host down, no route), 2 usage error,\n"
	"3 timed out, 4 no server could answer (none reachable, busy, no fabric yet), 5 other; errors on stderr as\n"
	"\"topoquery: what: why\".\n";

int tq_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("topoquery: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(topoquery --help for usage)\n", stderr);
	return EXIT_USAGE;
}

int tq_parse_num(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v;
	if (util_parse_u64(s, NULL, hi, &v) || v < lo)
		return tq_usage_error("%s%s%s: not a whole number %" PRIu64 "..%" PRIu64 "%s", name,
				      name[0] == '-' ? " " : "=", s, lo, hi, hi == TII_MSG_BYTES_MAX ? " (2^53)" : "");
	*out = v;
	return 0;
}

int tq_exit_status(int err)
{
	switch (err) {
	case TII_OK: return EXIT_OK;
	case TII_E_NOTFOUND: case TII_E_NOROUTE: case TII_E_NOGENERATION: case TII_E_NOPLANE: case TII_E_GONE:
		return EXIT_FAIL;
	case TII_E_INVAL: case TII_E_TOOMANY: case TII_E_SERVER: return EXIT_USAGE;
	case TII_E_TIMEOUT: return EXIT_TIMEOUT;
	case TII_E_CONNECT: case TII_E_BUSY: case TII_E_IO: case TII_E_NOFABRIC: case TII_E_UNSUPPORTED:
	case TII_E_PROTO:
		return EXIT_NOSERVER;
	default: return EXIT_ERROR;
	}
}

int tq_nomem(void)
{
	fputs("topoquery: out of memory\n", stderr);
	return EXIT_ERROR;
}

static int fail_as(struct tq *q, const char *what, int err, const char *why)
{
	const char *msg = tii_last_message(q->t);
	if (msg && *msg)
		fprintf(stderr, "topoquery: %s: %s (%s)\n", what, why, msg);
	else
		fprintf(stderr, "topoquery: %s: %s\n", what, why);
	return tq_exit_status(err);
}

int tq_fail(struct tq *q, const char *what, int err)
{
	return fail_as(q, what, err, tii_strerror(err));
}

int tq_fail_node(struct tq *q, const char *what, int err)
{
	return fail_as(q, what, err, err == TII_E_NOTFOUND ? "no such host or switch" : tii_strerror(err));
}

typedef int (*command_fn)(struct tq *, int, char **);

static const struct {
	const char *name;
	command_fn fn;
} commands[] = {
	{ "info", cmd_info },   { "hops", cmd_hops },         { "path", cmd_path },
	{ "depth", cmd_depth }, { "tree", cmd_tree },         { "clusters", cmd_clusters },
	{ "matrix", cmd_matrix }, { "shared", cmd_shared },   { "slurm", cmd_slurm },
	{ "order", cmd_order },   { "pick", cmd_pick },       { "map", cmd_map },
	{ "profile", cmd_profile },
	{ "schedule", cmd_schedule }, { "load", cmd_load },
	{ "history", cmd_history }, { "diff", cmd_diff }, { "planes", cmd_planes },
	{ "watch", cmd_watch }, { "simgrid", cmd_simgrid },
	{ "show", cmd_show }, { "links", cmd_links }, { "hosts", cmd_hosts }, { "resolve", cmd_resolve },
};

enum { OPT_FORMAT = 256, OPT_LOADS, OPT_SLOTS, OPT_PLOT, OPT_BYTES, OPT_LINKS, OPT_MATRIX, OPT_DOT, OPT_PLANE, OPT_AFTER, OPT_COUNT, OPT_WAIT, OPT_DOWN, OPT_STATE, OPT_DETAIL };
enum { OPT_DELAY = 512, OPT_ALL };

/* The options struct tq has no room for: they matter only until the
 * connection is open. */
struct cli {
	const char *servers, *file;
	long timeout;
	int help;   /* -h/--help seen: help on the command, if one is named */
};

/* A step's "no exit yet": every exit status is >= 0. */
#define GO_ON (-1)

/* The options whose value is a number. Returns GO_ON, or the exit status
 * of a usage error. */
static int number_option(struct tq *q, struct cli *cl, int c, const char *arg)
{
	char *end;
	uint64_t v;
	errno = 0;
	switch (c) {
	case 't':
		cl->timeout = strtol(arg, &end, 10);
		if (errno || *end || end == arg || cl->timeout < 1 || cl->timeout > TII_TIMEOUT_MAX_MS)
			return tq_usage_error("--timeout: not a number of milliseconds (1..%d): %s",
					      TII_TIMEOUT_MAX_MS, arg);
		break;
	case 'L':
		if (tq_parse_level(arg, &q->level))
			return tq_usage_error("--level: not a level (0 = top .. depth-1, top, leaf, -1 = leaf .. -64): %s",
					      arg);
		q->have_level = 1;
		break;
	case OPT_SLOTS:
		if (tq_parse_num("--slots", arg, 1, TII_MAP_RANKS_MAX, &v))
			return EXIT_USAGE;
		q->slots = (int)v;
		break;
	case OPT_BYTES:
		q->load_bytes = strtoull(arg, &end, 10);
		if (errno || *end || end == arg || arg[0] == '-' || !q->load_bytes || q->load_bytes > TII_MSG_BYTES_MAX)
			return tq_usage_error("--bytes: not a number of bytes 1..2^53: %s", arg);
		break;
	case OPT_AFTER:
		q->watch_after = strtoull(arg, &end, 10);
		if (errno || *end || end == arg || arg[0] == '-')
			return tq_usage_error("--after: not a generation: %s", arg);
		q->watch_after_set = 1;
		break;
	case OPT_COUNT:
		q->watch_count = strtol(arg, &end, 10);
		if (errno || *end || end == arg || q->watch_count < 0)
			return tq_usage_error("--count: not a count (0: forever): %s", arg);
		break;
	case OPT_WAIT:
		if (tq_parse_num("--wait", arg, 0, TII_WATCH_MAX_MS / 1000, &v))
			return EXIT_USAGE;
		q->watch_wait_s = (int)v;
		break;
	}
	return GO_ON;
}

/* matrix --delay[=BYTES]: the message size of the delay matrix (1 MiB). */
static int delay_option(struct tq *q, const char *arg)
{
	q->delay = 1;
	q->delay_bytes = 1048576;
	if (!arg)
		return GO_ON;
	char *end;
	errno = 0;
	q->delay_bytes = strtoull(arg, &end, 10);
	if (errno || *end || end == arg || arg[0] == '-' || q->delay_bytes > TII_DELAY_BYTES_MAX)
		return tq_usage_error("--delay=BYTES: a number 0..2^53, not %s", arg);
	return GO_ON;
}

/* All options, wherever they stand. Returns GO_ON, or the exit status of
 * --help, --version or a usage error. */
/* A level counted from the leaves is a negative number (`clusters -1
 * HOST`), which getopt would take for options. Such a word after a word
 * that is no option (the command, a host) is swapped for a copy marked
 * with a leading \x01 before getopt, and the original pointer put back
 * after it (getopt only moves pointers about). After an option (`-L -1`,
 * `--level -1`) it is that option's value and left alone. */
#define NEG_MAX 16
static struct {
	char *orig[NEG_MAX], copy[NEG_MAX][24];
	int n;
} neg;

static int is_negative(const char *s)
{
	return s[0] == '-' && s[1] >= '0' && s[1] <= '9' && strspn(s + 1, "0123456789") == strlen(s + 1) &&
	       strlen(s) < sizeof(neg.copy[0]) - 1;
}

static void negatives(int argc, char **argv, int mark)
{
	for (int i = 1; i < argc; i++) {
		if (mark && neg.n < NEG_MAX && is_negative(argv[i]) && argv[i - 1][0] != '-') {
			neg.orig[neg.n] = argv[i];
			snprintf(neg.copy[neg.n], sizeof(neg.copy[0]), "\x01%s", argv[i] + 1);
			argv[i] = neg.copy[neg.n++];
		} else if (!mark) {
			for (int k = 0; k < neg.n; k++)
				if (argv[i] == neg.copy[k])
					argv[i] = neg.orig[k];
		}
	}
}

static int parse_options_raw(int argc, char **argv, struct tq *q, struct cli *cl);

static int parse_options(int argc, char **argv, struct tq *q, struct cli *cl)
{
	negatives(argc, argv, 1);
	int rc = parse_options_raw(argc, argv, q, cl);
	negatives(argc, argv, 0);
	return rc;
}

static int parse_options_raw(int argc, char **argv, struct tq *q, struct cli *cl)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "file", required_argument, NULL, 'f' },
		{ "level", required_argument, NULL, 'L' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "loads", no_argument, NULL, OPT_LOADS },
		{ "slots", required_argument, NULL, OPT_SLOTS },
		{ "plot", required_argument, NULL, OPT_PLOT },
		{ "output", required_argument, NULL, 'o' },
		{ "bytes", required_argument, NULL, OPT_BYTES },
		{ "links", no_argument, NULL, OPT_LINKS },
		{ "matrix", required_argument, NULL, OPT_MATRIX },
		{ "dot", required_argument, NULL, OPT_DOT },
		{ "plane", required_argument, NULL, OPT_PLANE },
		{ "after", required_argument, NULL, OPT_AFTER },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "wait", required_argument, NULL, OPT_WAIT },
		{ "down", no_argument, NULL, OPT_DOWN },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "detail", no_argument, NULL, OPT_DETAIL },
		{ "delay", optional_argument, NULL, OPT_DELAY },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:jt:f:L:o:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's': cl->servers = optarg; break;
		case 'j': q->json = 1; break;
		case 'f': cl->file = optarg; break;
		case OPT_FORMAT:
			/* checked against the command in find_command() */
			q->format = optarg;
			break;
		case OPT_LOADS: q->loads = 1; break;
		case OPT_PLOT: q->plot = optarg; break;
		case 'o': q->output = optarg; break;
		case OPT_LINKS: q->load_links = 1; break;
		case OPT_MATRIX: q->load_matrix = optarg; break;
		case OPT_DOT: q->load_dot = optarg; break;
		case OPT_PLANE: q->plane = strcmp(optarg, "auto") ? optarg : NULL; break;
		case OPT_DOWN: q->link_state = "down"; break;
		case OPT_STATE: q->link_state = optarg; break;
		case OPT_DETAIL: q->detail = 1; break;
		case 't': case 'L': case OPT_SLOTS: case OPT_BYTES: case OPT_AFTER: case OPT_COUNT: case OPT_WAIT:
			if ((rc = number_option(q, cl, c, optarg)) != GO_ON)
				return rc;
			break;
		case OPT_DELAY:
			if ((rc = delay_option(q, optarg)) != GO_ON)
				return rc;
			break;
		case OPT_ALL: q->sg_all = 1; break;
		case 'h': cl->help = 1; break;
		case 'V': printf("topoquery %s (libtii %d.%d)\n", TOPO_VERSION, TII_VERSION_MAJOR, TII_VERSION_MINOR); return EXIT_OK;
		default:
			if (optopt && optopt < 256)
				return tq_usage_error("unknown option or missing argument: -%c", optopt);
			return tq_usage_error("unknown option or missing argument: %s", argv[optind - 1]);
		}
	}
	return GO_ON;
}

/* The command's function, NULL if there is none of that name. */
static command_fn lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return commands[i].fn;
	return NULL;
}

static int unknown_command(const char *cmd)
{
	const char *near = util_did_you_mean(cmd, &commands[0].name, sizeof(commands) / sizeof(commands[0]),
					     sizeof(commands[0]));
	if (near)
		return tq_usage_error("unknown command: %s (did you mean '%s'?)", cmd, near);
	return tq_usage_error("unknown command: %s", cmd);
}

/* One command's lines of the usage text: "  NAME ..." and the lines
 * indented under it. */
static void command_help(const char *name)
{
	size_t n = strlen(name);
	int in = 0;
	printf("usage: topoquery [OPTIONS] %s ...\n\n", name);
	for (const char *p = usage_text; *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len > n + 2 && !strncmp(p, "  ", 2) && !strncmp(p + 2, name, n) && (p[n + 2] == ' ' || p[n + 2] == '['))
			in = 1;
		else if (in && (len < 4 || strncmp(p, "    ", 4)))
			break;
		if (in)
			printf("%.*s\n", (int)len, p);
		p += len + (e != NULL);
	}
	printf("\nOptions: topoquery --help; output formats and examples: topoquery(1).\n");
}

/* -h/--help, "help" and "help COMMAND": the whole usage, or one command's.
 * Returns GO_ON when help was not asked for. */
static int help(int argc, char **argv, const struct cli *cl)
{
	const char *cmd = optind < argc ? argv[optind] : NULL;
	int word = cmd && !strcmp(cmd, "help");
	if (!cl->help && !word)
		return GO_ON;
	if (word)
		cmd = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (!cmd) {
		fputs(usage_text, stdout);
		return EXIT_OK;
	}
	if (!lookup(cmd))
		return unknown_command(cmd);
	command_help(cmd);
	return EXIT_OK;
}

/* The command, and the options that only some commands take. Returns
 * GO_ON with *fn set, or the exit status of a usage error. */
static int find_command(int argc, char **argv, const struct tq *q, command_fn *fn)
{
	if (optind >= argc)
		return tq_usage_error("no command");
	const char *cmd = argv[optind];
	if (!(*fn = lookup(cmd)))
		return unknown_command(cmd);
	int placing = !strcmp(cmd, "order") || !strcmp(cmd, "pick") || !strcmp(cmd, "map");
	if (!placing && strcmp(q->format, "text") && strcmp(q->format, "dot"))
		return tq_usage_error("--format: text or dot, not %s", q->format);
	if (!strcmp(q->format, "dot") && strcmp(cmd, "tree"))
		return tq_usage_error("--format dot is for tree only");
	if (q->output && strcmp(cmd, "slurm") && strcmp(cmd, "simgrid") && strcmp(cmd, "tree"))
		return tq_usage_error("-o is for slurm, simgrid and tree only");
	if ((q->load_bytes || q->load_links || q->load_matrix || q->load_dot) && strcmp(cmd, "load"))
		return tq_usage_error("--bytes, --links, --matrix and --dot are for load only");
	if (q->link_state && strcmp(cmd, "links"))
		return tq_usage_error("--down and --state are for links only");
	if (q->delay && strcmp(cmd, "matrix"))
		return tq_usage_error("--delay is for matrix only");
	if (q->sg_all && strcmp(cmd, "simgrid"))
		return tq_usage_error("--all is for simgrid only");
	return GO_ON;
}

/* -f FILE ("-": stdin) into q->hosts. Returns GO_ON or EXIT_FAIL. */
static int read_host_file(struct tq *q, const char *file)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	const char *why = NULL;
	if (!f) {
		fprintf(stderr, "topoquery: %s: %s\n", file, strerror(errno));
		return EXIT_FAIL;
	}
	int rc = hostlist_read(&q->hosts, f, &why);
	if (f != stdin)
		fclose(f);
	if (rc) {
		fprintf(stderr, "topoquery: %s: %s\n", file, why);
		strv_free(&q->hosts);
		return EXIT_FAIL;
	}
	q->have_file = 1;
	return GO_ON;
}

/* Connects, runs the command and checks that its output got out. */
static int run_command(struct tq *q, const struct cli *cl, command_fn fn, int argc, char **argv)
{
	int rc = tii_open(&q->t, cl->servers);
	if (rc) {
		fprintf(stderr, "topoquery: server list \"%s\": %s\n",
			cl->servers ? cl->servers : getenv("TII_SERVERS") ? getenv("TII_SERVERS") : TII_DEFAULT_SERVERS,
			tii_strerror(rc));
		strv_free(&q->hosts);
		return tq_exit_status(rc);
	}
	if (cl->timeout > 0)
		tii_set_timeout(q->t, (int)cl->timeout);
	if (q->plane && tii_set_plane(q->t, q->plane)) {
		tii_close(q->t);
		strv_free(&q->hosts);
		return tq_usage_error("--plane: not a plane name (letters, digits, '_', '-'): %s", q->plane);
	}
	int status = fn(q, argc - optind - 1, argv + optind + 1);
	if (status == EXIT_OK && q->out == stdout && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "topoquery: writing output: %s\n", strerror(errno));
		status = EXIT_ERROR;
	}
	tii_close(q->t);
	strv_free(&q->hosts);
	return status;
}

int main(int argc, char **argv)
{
	struct tq q = { .format = "text", .level = -1, .out = stdout, .slots = 1, .watch_count = 1, .watch_wait_s = 3600 };
	struct cli cl = { NULL, NULL, -1, 0 };
	command_fn fn = NULL;
	int rc;
	if ((rc = parse_options(argc, argv, &q, &cl)) != GO_ON)
		return rc;
	if ((rc = help(argc, argv, &cl)) != GO_ON)
		return rc;
	if ((rc = find_command(argc, argv, &q, &fn)) != GO_ON)
		return rc;
	if (cl.file && (rc = read_host_file(&q, cl.file)) != GO_ON)
		return rc;
	return run_command(&q, &cl, fn, argc, argv);
}
