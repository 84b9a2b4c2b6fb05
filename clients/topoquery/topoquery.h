/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topoquery.h - shared state of the topoquery command line (main.c parses,
 * cmds.c runs the commands). Uses only tii.h to talk to topod.
 *
 * Exit statuses, one table for every command (topoquery(1), EXIT STATUS),
 * so that a wrapper can tell "fall back" from "fix your input":
 *   0 EXIT_OK        the answer
 *   1 EXIT_FAIL      the answer is "no": an unknown host, no route, a file
 *                    that cannot be read
 *   2 EXIT_USAGE     a usage error, ours or one topod refused
 *   3 EXIT_TIMEOUT   a server did not answer in time (watch: nothing new)
 *   4 EXIT_NOSERVER  no server could answer: none reachable, busy, without
 *                    a fabric, too old for the command, or not topod
 *   5 EXIT_ERROR     the answer could not be had for another reason (out of
 *                    memory, a reply over the size limit)
 */
#ifndef TOPOQUERY_H
#define TOPOQUERY_H

#include <stdint.h>
#include <stdio.h>

#include "hostlist.h"
#include "tii.h"

#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define EXIT_TIMEOUT 3
#define EXIT_NOSERVER 4
#define EXIT_ERROR 5

/* The exit status for a libtii error code (the table above). */
int tq_exit_status(int tii_err);
/* "topoquery: out of memory", EXIT_ERROR. */
int tq_nomem(void);

struct tq {
	tii_t *t;
	int json;
	int loads;            /* shared --loads */
	const char *format;   /* tree --format: "text" or "dot"; order/pick/map: host file formats */
	int slots;            /* order/pick/map --slots: ranks per host (1) */
	const char *plot;     /* schedule --plot FILE.svg; load --plot FILE.svg|.png */
	const char *output;   /* slurm, simgrid: -o FILE, NULL for stdout */
	long level;           /* clusters -L LEVEL (negative: from the leaves) */
	int have_level;       /* -L given */
	struct strv hosts;    /* hosts from -f FILE, expanded */
	int have_file;        /* -f was given */
	FILE *out;
	/* load */
	uint64_t load_bytes;      /* --bytes N, 0: 1 */
	int load_links;           /* --links: list every loaded link */
	const char *load_matrix;  /* --matrix FILE */
	const char *load_dot;     /* --dot FILE */
	const char *plane;        /* --plane NAME, NULL: the plane the hosts are on */
	/* watch */
	uint64_t watch_after;     /* --after G */
	int watch_after_set;
	long watch_count;         /* --count N (1; 0: forever) */
	int watch_wait_s;         /* --wait SEC per generation (3600), and for topod to come back */
	/* diff */
	int detail;               /* --detail: every record, not the summary */
	/* links */
	const char *link_state;   /* --down ("down") or --state STATE, NULL: any */
	/* matrix --delay[=BYTES], simgrid --all */
	int delay;
	uint64_t delay_bytes;
	int sg_all;
};

/* "topoquery: what: why" on stderr for a failed libtii call; returns
 * EXIT_FAIL. */
int tq_fail(struct tq *q, const char *what, int err);
/* tq_fail for a command that takes switches too: TII_E_NOTFOUND reads
 * "no such host or switch". */
int tq_fail_node(struct tq *q, const char *what, int err);
/* The host list of a command: its words (expanded) then -f's hosts.
 * Returns EXIT_OK, or EXIT_USAGE after a message (also for an empty list
 * unless allow_none). */
int tq_collect_hosts(struct tq *q, int argc, char **argv, struct strv *out, int allow_none);
/* The one number parser of topoquery's options: s is a whole decimal
 * number lo..hi, exactly (never wrapped or clamped into the range). 0, or
 * EXIT_USAGE after "topoquery: NAME=S: not a whole number LO..HI" (for
 * an --option: "NAME S"). */
int tq_parse_num(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* A level: 0..65535 from the top, "top", "leaf", -1..-64 from the leaves. */
int tq_parse_level(const char *s, long *level);
/* "topoquery: msg" plus a hint, returns EXIT_USAGE. */
int tq_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Children of every cluster of a tree, CSR-style: clusters' child
 * clusters and hosts, in topod's order (cmds.c). */
struct kids {
	size_t *cfirst, *cidx;   /* [nclusters + 1], [nclusters] */
	size_t *hfirst, *hidx;   /* [nclusters + 1], [nhosts] */
};
int kids_build(const tii_tree_t *tr, struct kids *k);   /* 0, or -1 out of memory */
void kids_free(struct kids *k);

/* Each command gets its arguments after the command word. */
int cmd_info(struct tq *q, int argc, char **argv);
int cmd_schedule(struct tq *q, int argc, char **argv); /* schedule.c */
int cmd_hops(struct tq *q, int argc, char **argv);
int cmd_path(struct tq *q, int argc, char **argv);
int cmd_depth(struct tq *q, int argc, char **argv);
int cmd_tree(struct tq *q, int argc, char **argv);
int cmd_clusters(struct tq *q, int argc, char **argv);
int cmd_matrix(struct tq *q, int argc, char **argv);
int cmd_shared(struct tq *q, int argc, char **argv);
int cmd_slurm(struct tq *q, int argc, char **argv);
int cmd_load(struct tq *q, int argc, char **argv);
/* place_cmds.c */
int cmd_order(struct tq *q, int argc, char **argv);
int cmd_pick(struct tq *q, int argc, char **argv);
int cmd_map(struct tq *q, int argc, char **argv);
/* history.c: the fabric over time */
int cmd_history(struct tq *q, int argc, char **argv);
int cmd_diff(struct tq *q, int argc, char **argv);
int cmd_planes(struct tq *q, int argc, char **argv);
int cmd_watch(struct tq *q, int argc, char **argv);
/* simgrid.c: a SimGrid platform of the hosts (XML) */
int cmd_simgrid(struct tq *q, int argc, char **argv);
/* profile.c: reads topoprof reports, never asks topod */
int cmd_profile(struct tq *q, int argc, char **argv);
/* inventory.c: show, links, hosts, resolve */
int cmd_show(struct tq *q, int argc, char **argv);
int cmd_links(struct tq *q, int argc, char **argv);
int cmd_hosts(struct tq *q, int argc, char **argv);
int cmd_resolve(struct tq *q, int argc, char **argv);

#endif
