/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * history.c - topoquery history and topoquery diff: the fabric over time.
 *
 *   topoquery history
 *   topoquery diff FROM TO [HOSTS...]
 *
 * FROM and TO are generations, "@UNIX_SECONDS", or local times
 * "YYYY-MM-DD HH:MM[:SS]" / "YYYY-MM-DDTHH:MM[:SS]", UTC with a trailing Z
 * as history prints them (turned into @SECONDS here; topod takes the
 * generation served at that time).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "out.h"
#include "topoquery.h"

/* UTC, marked Z, as topod's log has it; diff takes it back as written. */
static void iso_time(uint64_t us, char *buf, size_t n)
{
	time_t t = (time_t)(us / 1000000u);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, n, "-");
}

static const char *kind_str(enum tii_gen_kind k)
{
	return k == TII_GEN_SERVED ? "served" : k == TII_GEN_DELTA ? "delta" : "full";
}

int cmd_history(struct tq *q, int argc, char **argv)
{
	(void)argv;
	if (argc)
		return tq_usage_error("history takes no arguments");
	tii_history_t *h;
	int rc = tii_get_history(q->t, &h);
	if (rc)
		return tq_fail(q, "history", rc);
	FILE *o = q->out;
	if (q->json) {
		fprintf(o, "{\"generation\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"generations\":[", h->generation, h->bytes);
		for (size_t i = 0; i < h->n; i++) {
			const struct tii_generation *g = &h->gens[i];
			fprintf(o, "%s{\"generation\":%" PRIu64 ",\"kind\":\"%s\",\"snapshot_us\":%" PRIu64
				   ",\"received_us\":%" PRIu64 ",\"sm_guid\":",
				i ? "," : "", g->generation, kind_str(g->kind), g->snapshot_us, g->received_us);
			json_guid(o, g->sm_guid);
			fprintf(o, ",\"sweep\":%" PRIu64 ",\"engine\":", g->sweep);
			json_str(o, g->engine);
			fprintf(o, ",\"nodes\":%u,\"switches\":%u,\"cas\":%u,\"links\":%u,\"hosts\":%u,\"bytes\":%" PRIu64 "}",
				g->nodes, g->switches, g->cas, g->links, g->hosts, g->bytes);
		}
		fputs("]}\n", o);
	} else {
		fprintf(o, "%-20s %-6s %-19s %-8s %7s %8s %6s %6s %6s %9s\n", "generation", "kind", "taken", "engine",
			"nodes", "switches", "cas", "links", "hosts", "bytes");
		for (size_t i = 0; i < h->n; i++) {
			const struct tii_generation *g = &h->gens[i];
			char when[32];
			iso_time(g->snapshot_us, when, sizeof(when));
			fprintf(o, "%-20" PRIu64 " %-6s %-19s %-8s %7u %8u %6u %6u %6u %9" PRIu64 "\n", g->generation,
				kind_str(g->kind), when, g->engine[0] ? g->engine : "-", g->nodes, g->switches, g->cas,
				g->links, g->hosts, g->bytes);
		}
	}
	tii_history_free(h);
	return EXIT_OK;
}

/* A generation, @SECONDS, or a local date and time -> what topod takes. */
static int when_arg(const char *s, char *out, size_t n)
{
	if (s[0] == '@' || strspn(s, "0123456789") == strlen(s)) {
		if (!*s || strlen(s) >= n)
			return -1;
		snprintf(out, n, "%s", s);
		return 0;
	}
	static const char *const fmts[] = { "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M",
					    "%Y-%m-%dT%H:%M" };
	for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
		struct tm tm;
		memset(&tm, 0, sizeof(tm));
		const char *end = strptime(s, fmts[k], &tm);
		/* A trailing Z is UTC (history's and the log's form); without
		 * it, the local time of this host. */
		int utc = end && end[0] == 'Z' && !end[1];
		if (end && (!*end || utc)) {
			tm.tm_isdst = -1;
			time_t t = utc ? timegm(&tm) : mktime(&tm);
			if (t < 0)
				return -1;
			snprintf(out, n, "@%lld", (long long)t);
			return 0;
		}
	}
	return -1;
}

/* ---- diff records as JSON ---------------------------------------------------- */

/* The names of a record's positional words, by its kind (docs/protocol.md,
 * `diff`); key=value words are named by their key. */
static const char *const *diff_fields(const char *kind)
{
	static const char *const node[] = { "node", "type", "name", NULL };
	static const char *const link[] = { "a", "b", "a_name", "b_name", NULL };
	static const char *const port[] = { "end", "name", NULL };
	static const char *const states[] = { "states", NULL };
	static const char *const lft[] = { "switch", "name", NULL };
	static const char *const missing[] = { "host", "where", NULL };
	static const char *const host[] = { "host", NULL };
	static const char *const none[] = { NULL };
	if (!strncmp(kind, "node-", 5))
		return node;
	if (!strncmp(kind, "link-", 5))
		return link;
	return !strcmp(kind, "port") ? port : !strcmp(kind, "port-states") ? states : !strcmp(kind, "lft") ? lft
	       : !strcmp(kind, "host-missing") ? missing : !strcmp(kind, "host") ? host : none;
}

/* A protocol-escaped name ("\xHH" for odd bytes) back to its bytes. */
static void json_unescaped(FILE *o, const char *s, size_t n)
{
	char buf[1024];
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < sizeof(buf); i++) {
		unsigned v;
		if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x' && sscanf(s + i + 2, "%2x", &v) == 1) {
			buf[k++] = (char)v;
			i += 3;
		} else {
			buf[k++] = s[i];
		}
	}
	buf[k] = 0;
	json_str(o, buf);
}

/* One value: a number, "A->B" as {"from":A,"to":B}, 0xGUID/PORT as
 * {"guid":..,"port":..}, else a string. */
static void json_diff_value(FILE *o, const char *v, size_t n)
{
	char w[256];
	snprintf(w, sizeof(w), "%.*s", (int)(n < 255 ? n : 255), v);
	char *arrow = strstr(w, "->"), *slash = strchr(w, '/'), *end;
	if (arrow) {
		*arrow = 0;
		fputs("{\"from\":", o);
		json_diff_value(o, w, strlen(w));
		fputs(",\"to\":", o);
		json_diff_value(o, arrow + 2, strlen(arrow + 2));
		fputc('}', o);
	} else if (w[0] == '0' && w[1] == 'x' && slash) {
		*slash = 0;
		fputs("{\"guid\":", o);
		json_str(o, w);
		fprintf(o, ",\"port\":%lu}", strtoul(slash + 1, NULL, 10));
	} else if (w[0] >= '0' && w[0] <= '9' && (strtoull(w, &end, 10), !*end)) {
		fputs(w, o);
	} else {
		json_str(o, w);
	}
}

/* One record line as an object: {"kind":..., field: value, ...}. */
static void json_diff_record(FILE *o, const char *line)
{
	const char *p = line, *const *names = NULL;
	size_t pos = 0;
	int first = 1;
	fputc('{', o);
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *w = p, *eq = NULL;
		if (*p == '"') {
			const char *q = strchr(p + 1, '"');
			p = q ? q + 1 : p + strlen(p);
		} else {
			while (*p && *p != ' ')
				p++;
			eq = memchr(w, '=', (size_t)(p - w));
		}
		size_t n = (size_t)(p - w);
		if (first) {
			fputs("\"kind\":", o);
			json_diff_value(o, w, n);
			char kind[32];
			snprintf(kind, sizeof(kind), "%.*s", (int)(n < 31 ? n : 31), w);
			names = diff_fields(kind);
			first = 0;
		} else if (eq) {
			char key[64];
			snprintf(key, sizeof(key), "%.*s", (int)(eq - w < 63 ? eq - w : 63), w);
			fputc(',', o);
			json_str(o, key);
			fputc(':', o);
			json_diff_value(o, eq + 1, (size_t)(p - eq - 1));
		} else {
			const char *name = names[pos] ? names[pos++] : "arg";
			fprintf(o, ",\"%s\":", name);
			if (*w == '"')
				json_unescaped(o, w + 1, n >= 2 ? n - 2 : 0);
			else
				json_diff_value(o, w, n);
		}
	}
	fputc('}', o);
}

/* ---- diff summary ---------------------------------------------------------------- */

#define DIFF_WORDS 8

/* A record's words: quoted names without their quotes (still escaped as
 * the protocol escapes them), the rest split on spaces; into buf. */
static size_t diff_words(const char *line, char *buf, size_t n, const char *w[DIFF_WORDS])
{
	size_t k = 0, o = 0;
	for (const char *p = line; *p && k < DIFF_WORDS;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *end;
		if (*p == '"') {
			p++;
			end = strchr(p, '"');
			end = end ? end : p + strlen(p);
		} else {
			end = p + strcspn(p, " ");
		}
		size_t len = (size_t)(end - p);
		if (o + len + 1 > n)
			break;
		memcpy(buf + o, p, len);
		buf[o + len] = '\0';
		w[k++] = buf + o;
		o += len + 1;
		p = *end == '"' ? end + 1 : end;
	}
	return k;
}

#define DIFF_NAMED 3 /* cables or nodes named on a summary line, then "and N more" */

/* "down: 2 cables: A port 3 - B port 1, C port 2 - D port 1" from the
 * link-down (or link-up) records. */
static void summary_links(FILE *o, const tii_diff_t *d, const char *kind, const char *what, uint64_t count,
			  const char *end)
{
	fprintf(o, "%s: ", what);
	if (!count) {
		fprintf(o, "none%s", end);
		return;
	}
	fprintf(o, "%" PRIu64 " cable%s:", count, count == 1 ? "" : "s");
	size_t shown = 0, klen = strlen(kind);
	for (size_t i = 0; i < d->nlines && shown < DIFF_NAMED; i++) {
		char buf[1024];
		const char *w[DIFF_WORDS];
		if (strncmp(d->lines[i], kind, klen) || d->lines[i][klen] != ' ' ||
		    diff_words(d->lines[i], buf, sizeof(buf), w) < 5)
			continue;
		const char *pa = strchr(w[1], '/'), *pb = strchr(w[2], '/');
		fprintf(o, "%s %s port %s - %s port %s", shown ? "," : "", w[3], pa ? pa + 1 : "?", w[4],
			pb ? pb + 1 : "?");
		shown++;
	}
	if (count > shown)
		fprintf(o, " and %" PRIu64 " more", count - shown);
	fputs(end, o);
}

/* "nodes: 1 gone (ibsw-L2-001), none new" */
static void summary_nodes(FILE *o, const tii_diff_t *d)
{
	static const char *const kinds[] = { "node-gone", "node-new" };
	const uint64_t counts[] = { d->nodes_gone, d->nodes_new };
	fputs("nodes:", o);
	for (int k = 0; k < 2; k++) {
		fprintf(o, "%s ", k ? "," : "");
		if (!counts[k]) {
			fprintf(o, "none %s", k ? "new" : "gone");
			continue;
		}
		fprintf(o, "%" PRIu64 " %s (", counts[k], k ? "new" : "gone");
		size_t shown = 0;
		for (size_t i = 0; i < d->nlines && shown < DIFF_NAMED; i++) {
			char buf[1024];
			const char *w[DIFF_WORDS];
			if (strncmp(d->lines[i], kinds[k], 9) || diff_words(d->lines[i], buf, sizeof(buf), w) < 4)
				continue;
			fprintf(o, "%s%s", shown++ ? ", " : "", w[3]);
		}
		if (counts[k] > shown)
			fprintf(o, "%s%" PRIu64 " more", shown ? " and " : "", counts[k] - shown);
		fputc(')', o);
	}
	fputc('\n', o);
}

/* What an administrator reads first: at most 7 lines. */
static void diff_summary(FILE *o, const tii_diff_t *d, const char *from, const char *to, size_t nhosts)
{
	fprintf(o, "diff %" PRIu64 " -> %" PRIu64 "\n", d->from, d->to);
	summary_links(o, d, "link-down", "down", d->links_down, "\n");
	summary_links(o, d, "link-up", "up", d->links_up, "\n");
	summary_nodes(o, d);
	fprintf(o, "ports: %" PRIu64 " changed", d->ports);
	for (size_t i = 0; i < d->nlines; i++) {
		char buf[256];
		const char *w[DIFF_WORDS];
		if (!strncmp(d->lines[i], "port-states ", 12) && diff_words(d->lines[i], buf, sizeof(buf), w) >= 3)
			fprintf(o, ", %s %s", w[1], w[2]);
	}
	fprintf(o, "\nroutes: %" PRIu64 " switch%s changed %" PRIu64 " LFT entries; %" PRIu64
		   " host pairs changed routes, %" PRIu64 " hosts at their ends%s\n",
		d->lft_switches, d->lft_switches == 1 ? "" : "es", d->lft_entries, d->routes_changed, d->hosts_changed,
		nhosts ? " (of the hosts named)" : "");
	if (d->nlines || d->npairs)
		fprintf(o, "detail: topoquery diff --detail %s%s%s %s%s%s%s\n", strchr(from, ' ') ? "'" : "", from,
			strchr(from, ' ') ? "'" : "", strchr(to, ' ') ? "'" : "", to, strchr(to, ' ') ? "'" : "",
			nhosts ? " HOSTS..." : "");
}

int cmd_diff(struct tq *q, int argc, char **argv)
{
	if (argc < 2)
		return tq_usage_error("diff FROM TO [HOSTS...]: FROM and TO are generations, @UNIX_SECONDS or "
				      "\"YYYY-MM-DD HH:MM[:SS]\"");
	char from[40], to[40];
	if (when_arg(argv[0], from, sizeof(from)) || when_arg(argv[1], to, sizeof(to)))
		return tq_usage_error("diff: not a generation, @SECONDS or a date and time: %s",
				      when_arg(argv[0], from, sizeof(from)) ? argv[0] : argv[1]);
	struct strv hosts = { 0 };
	int status = tq_collect_hosts(q, argc - 2, argv + 2, &hosts, 1);
	if (status) {
		strv_free(&hosts);
		return status;
	}
	tii_diff_t *d;
	size_t nhosts = hosts.n;
	int rc = tii_diff(q->t, from, to, (const char *const *)hosts.v, hosts.n, &d);
	strv_free(&hosts);
	if (rc)
		return tq_fail(q, "diff", rc);
	FILE *o = q->out;
	if (q->json) {
		fprintf(o,
			"{\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"links_down\":%" PRIu64 ",\"links_up\":%" PRIu64
			",\"nodes_gone\":%" PRIu64 ",\"nodes_new\":%" PRIu64 ",\"ports\":%" PRIu64
			",\"lft_switches\":%" PRIu64 ",\"lft_entries\":%" PRIu64 ",\"routes_changed\":%" PRIu64
			",\"hosts_changed\":%" PRIu64 ",\"pairs\":[",
			d->from, d->to, d->links_down, d->links_up, d->nodes_gone, d->nodes_new, d->ports, d->lft_switches,
			d->lft_entries, d->routes_changed, d->hosts_changed);
		for (size_t i = 0; i < d->npairs; i++) {
			fputs(i ? ",[" : "[", o);
			json_str(o, d->pairs[i].a);
			fputc(',', o);
			json_str(o, d->pairs[i].b);
			fputc(']', o);
		}
		fputs("],\"lines\":[", o);
		for (size_t i = 0; i < d->nlines; i++) {
			if (i)
				fputc(',', o);
			json_str(o, d->lines[i]);
		}
		fputs("],\"records\":[", o);
		for (size_t i = 0; i < d->nlines; i++) {
			if (i)
				fputc(',', o);
			json_diff_record(o, d->lines[i]);
		}
		fputs("]}\n", o);
	} else if (!q->detail) {
		diff_summary(o, d, argv[0], argv[1], nhosts);
	} else {
		fprintf(o,
			"from %" PRIu64 "\nto %" PRIu64 "\nlinks_down %" PRIu64 "\nlinks_up %" PRIu64 "\nnodes_gone %" PRIu64
			"\nnodes_new %" PRIu64 "\nports %" PRIu64 "\nlft_switches %" PRIu64 "\nlft_entries %" PRIu64
			"\nroutes_changed %" PRIu64 "\nhosts_changed %" PRIu64 "\n",
			d->from, d->to, d->links_down, d->links_up, d->nodes_gone, d->nodes_new, d->ports, d->lft_switches,
			d->lft_entries, d->routes_changed, d->hosts_changed);
		for (size_t i = 0; i < d->nlines; i++)
			fprintf(o, "%s\n", d->lines[i]);
		for (size_t i = 0; i < d->npairs; i++)
			fprintf(o, "route %s %s\n", d->pairs[i].a, d->pairs[i].b);
	}
	tii_diff_free(d);
	return EXIT_OK;
}

/* ---- planes --------------------------------------------------------------------- */

int cmd_planes(struct tq *q, int argc, char **argv)
{
	if (argc > 1)
		return tq_usage_error("planes [HOST]");
	struct tii_plane pl[TOPO_PLANES_MAX];
	size_t n;
	int rc = tii_get_planes(q->t, argc ? argv[0] : NULL, pl, &n);
	if (rc)
		return tq_fail(q, "planes", rc);
	FILE *o = q->out;
	if (q->json)
		fputs("{\"planes\":[", o);
	for (size_t i = 0; i < n; i++) {
		if (q->json) {
			fprintf(o, "%s{\"name\":", i ? "," : "");
			json_str(o, pl[i].name);
			fprintf(o, ",\"generation\":%" PRIu64 ",\"nodes\":%u,\"switches\":%u,\"hosts\":%u,\"sm_guid\":",
				pl[i].generation, pl[i].nodes, pl[i].switches, pl[i].hosts);
			json_guid(o, pl[i].sm_guid);
			fprintf(o, ",\"selected\":%s", pl[i].selected ? "true" : "false");
			if (argc)
				fprintf(o, ",\"lid\":%u,\"port_guid\":\"0x%016" PRIx64 "\"", pl[i].lid, pl[i].port_guid);
			fputc('}', o);
		} else {
			fprintf(o, "%s generation %" PRIu64 " nodes %u switches %u hosts %u sm_guid 0x%016" PRIx64, pl[i].name,
				pl[i].generation, pl[i].nodes, pl[i].switches, pl[i].hosts, pl[i].sm_guid);
			if (argc)
				fprintf(o, " lid %u port_guid 0x%016" PRIx64, pl[i].lid, pl[i].port_guid);
			fputc('\n', o);
		}
	}
	if (q->json)
		fputs("]}\n", o);
	return EXIT_OK;
}

/* ---- watch ---------------------------------------------------------------------- */

/* Can a watch go on after this error once topod is back? A restart closes
 * the connection (IO), refuses the next ones (CONNECT) or is busy. */
static int watch_transient(int rc)
{
	return rc == TII_E_IO || rc == TII_E_CONNECT || rc == TII_E_BUSY || rc == TII_E_NOFABRIC;
}

#define WATCH_BACKOFF_MAX_S 30 /* the longest wait between two reconnection attempts */

/* Waits for topod to answer again after rc: 1 s doubling to
 * WATCH_BACKOFF_MAX_S between tries, each said on stderr, for at most
 * budget_s in all. 0 once a `watch GEN 0` answers (*now: what is served),
 * else the last error. */
static int watch_reconnect(struct tq *q, int rc, uint64_t gen, int budget_s, uint64_t *now)
{
	int waited = 0, delay = 1;
	const char *why = tii_last_message(q->t);
	fprintf(stderr, "topoquery: watch: lost topod (%s); reconnecting\n", why && *why ? why : tii_strerror(rc));
	while (waited < budget_s) {
		int d = delay < budget_s - waited ? delay : budget_s - waited;
		fprintf(stderr, "topoquery: watch: retrying in %d s\n", d);
		sleep((unsigned)d);
		waited += d;
		rc = tii_watch(q->t, gen, 0, now);
		if (!rc || rc == TII_E_TIMEOUT) {
			fprintf(stderr, "topoquery: watch: reconnected after %d s\n", waited);
			return 0;
		}
		if (!watch_transient(rc))
			return rc;
		delay = delay * 2 > WATCH_BACKOFF_MAX_S ? WATCH_BACKOFF_MAX_S : delay * 2;
	}
	fprintf(stderr, "topoquery: watch: no answer from topod within %d s\n", budget_s);
	return rc;
}

/* The cables that went down and came up from gen to ng, from topod's diff
 * (counts and at most DIFF_NAMED of each); nothing when topod no longer
 * has gen (a restart without a state directory). */
static void watch_links(struct tq *q, uint64_t gen, uint64_t ng)
{
	char a[24], b[24];
	tii_diff_t *d;
	snprintf(a, sizeof(a), "%" PRIu64, gen);
	snprintf(b, sizeof(b), "%" PRIu64, ng);
	if (!gen || tii_diff(q->t, a, b, NULL, 0, &d))
		return;
	if (q->json) {
		fprintf(q->out, ",\"links_down\":%" PRIu64 ",\"links_up\":%" PRIu64 ",\"ports\":%" PRIu64
			",\"links\":[", d->links_down, d->links_up, d->ports);
		size_t k = 0;
		for (size_t i = 0; i < d->nlines; i++)
			if (!strncmp(d->lines[i], "link-", 5)) {
				fputs(k++ ? "," : "", q->out);
				json_diff_record(q->out, d->lines[i]);
			}
		fputc(']', q->out);
	} else {
		/* one line per generation, for a `while read` loop */
		summary_links(q->out, d, "link-down", "; down", d->links_down, "");
		summary_links(q->out, d, "link-up", "; up", d->links_up, "");
		fprintf(q->out, "; ports: %" PRIu64 " changed", d->ports);
	}
	tii_diff_free(d);
}

/* One line (text: and its link lines) for generation ng after gen. */
static void watch_print(struct tq *q, uint64_t gen, uint64_t ng)
{
	struct tii_info in;
	char when[32] = "-";
	int irc = tii_get_info(q->t, &in);
	if (!irc)
		iso_time(in.snapshot_us, when, sizeof(when));
	if (q->json) {
		fprintf(q->out, "{\"generation\":%" PRIu64 ",\"previous\":%" PRIu64, ng, gen);
		if (!irc) {
			fprintf(q->out, ",\"taken\":\"%s\",\"nodes\":%u,\"hosts\":%u,\"engine\":", when, in.nodes, in.hosts);
			json_str(q->out, in.engine);
		}
		watch_links(q, gen, ng);
		fputs("}\n", q->out);
	} else {
		if (!irc)
			fprintf(q->out, "generation %" PRIu64 " taken %s nodes %u switches %u hosts %u engine %s", ng, when,
				in.nodes, in.switches, in.hosts, in.engine);
		else
			fprintf(q->out, "generation %" PRIu64, ng);
		watch_links(q, gen, ng);
		fputc('\n', q->out);
	}
	fflush(q->out);
}

int cmd_watch(struct tq *q, int argc, char **argv)
{
	(void)argv;
	if (argc)
		return tq_usage_error("watch takes options only: [--after G] [--count N] [--wait SEC]");
	uint64_t gen = q->watch_after;
	int rc;
	if (!q->watch_after_set) {
		/* "watch 0 0" answers at once with what is served, fabric or not */
		rc = tii_watch(q->t, 0, 0, &gen);
		if (rc && rc != TII_E_TIMEOUT)
			return tq_fail(q, "watch", rc);
	}
	int wait_ms = q->watch_wait_s * 1000;
	for (long n = 0; !q->watch_count || n < q->watch_count; n++) {
		uint64_t ng;
		rc = tii_watch(q->t, gen, wait_ms, &ng);
		/* topod restarted (or went away for a while): wait for it, then
		 * go on from the generation last printed, which a restart may
		 * have replaced ("other than", protocol.md) */
		while (watch_transient(rc)) {
			rc = watch_reconnect(q, rc, gen, q->watch_wait_s, &ng);
			/* a topod back without its state serves nothing (0) until
			 * the next snapshot: wait for that one */
			if (!rc)
				rc = ng != gen && ng ? 0 : tii_watch(q->t, ng, wait_ms, &ng);
			else if (watch_transient(rc))
				return tq_fail(q, "watch", rc);
		}
		if (rc == TII_E_TIMEOUT) {
			fprintf(stderr, "topoquery: watch: no generation after %" PRIu64 " within %d s\n", gen, q->watch_wait_s);
			return EXIT_TIMEOUT;
		}
		if (rc)
			return tq_fail(q, "watch", rc);
		watch_print(q, gen, ng);
		gen = ng;
	}
	return EXIT_OK;
}
