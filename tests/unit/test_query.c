/*
 * test_query.c - every row of the command table answered from a real
 * (synthetic) fabric through query_answer(): each reply is one "OK gen=..."
 * line followed by exactly the lines it announces, or one "ERR CODE text"
 * line; arity is checked from the table; fabric commands before the first
 * snapshot say NOFABRIC; `help` lists exactly the table.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cmd.h"
#include "fabric.h"
#include "history.h"
#include "query.h"
#include "store.h"
#include "testfab.h"

/* Splits the reply into lines and checks its framing; returns its first
 * line (static buffer) and sets *nlines to the lines after it. */
static const char *framed(struct evbuffer *out, int *ok, size_t *nlines)
{
	static char head[4096];
	size_t len = evbuffer_get_length(out);
	char *all = malloc(len + 1);
	evbuffer_remove(out, all, len);
	all[len] = '\0';
	*ok = len > 0 && all[len - 1] == '\n';
	char *nl = strchr(all, '\n');
	size_t hl = nl ? (size_t)(nl - all) : len;
	snprintf(head, sizeof(head), "%.*s", (int)(hl < sizeof(head) - 1 ? hl : sizeof(head) - 1), all);
	size_t n = 0;
	for (char *p = nl ? nl + 1 : all + len; *p; p++)
		n += *p == '\n';
	*nlines = n;
	const char *lk = strstr(head, " lines=");
	if (!strncmp(head, "OK", 2))
		*ok = *ok && (lk ? strtoul(lk + 7, NULL, 10) == n : n == 0);
	else
		*ok = *ok && !strncmp(head, "ERR ", 4) && n == 0;
	free(all);
	return head;
}

/* Whether an OK head's keys are what the row's reply describes: every key
 * it has is described, and every key described without '?' is there.
 * why: the first that is not. Values with spaces are quoted ("..."). */
static int head_as_described(const char *head, const char *reply, char *why, size_t wl)
{
	char keys[64][40];
	int nk = 0;
	for (const char *p = head + 2; *p && nk < 64;) {
		while (*p == ' ')
			p++;
		const char *eq = p + strcspn(p, " =");
		if (*eq == '=' && eq > p && eq - p < 40)
			snprintf(keys[nk++], sizeof(keys[0]), "%.*s", (int)(eq - p), p);
		p = eq;
		if (*p == '=' && p[1] == '"') { /* a quoted value */
			const char *q = strchr(p + 2, '"');
			p = q ? q + 1 : p + strlen(p);
		}
		p += strcspn(p, " ");
	}
	for (int i = 0; i < nk; i++) {
		char w[48];
		snprintf(w, sizeof(w), " %.39s ", keys[i]);
		char *d = malloc(strlen(reply) + 3);
		sprintf(d, " %s ", reply);
		int found = strstr(d, w) != NULL;
		w[strlen(w) - 1] = '?';
		found |= strstr(d, w) != NULL;
		free(d);
		if (!found)
			return snprintf(why, wl, "%.39s not described", keys[i]), 0;
	}
	for (const char *p = reply; *p;) {
		size_t l = strcspn(p, " ");
		int found = 0;
		for (int i = 0; i < nk && p[l - 1] != '?'; i++)
			found |= strlen(keys[i]) == l && !strncmp(keys[i], p, l);
		if (p[l - 1] != '?' && !found)
			return snprintf(why, wl, "%.*s missing", (int)l, p), 0;
		p += l + (p[l] == ' ');
	}
	return 1;
}

static enum query_result ask(const struct fabric *f, const char *line, struct evbuffer *out)
{
	static struct proto_req req;
	static char buf[8192];
	const char *why;
	snprintf(buf, sizeof(buf), "%s", line);
	if (proto_split(buf, strlen(buf), &req, &why)) {
		evbuffer_add_printf(out, "ERR PROTO %s\n", why);
		return QUERY_OK;
	}
	return query_answer(f, &req, out);
}

int main(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	fabric_index_build(s, NULL, 1, &x, err);
	CHECK(x != NULL, "the 4-leaf, 16-host tree builds");
	struct fabric *f = fabric_new(s, "test");
	f->index = x;
	s->generation = 7;
	s->timestamp = 5000000; /* 5 s after the epoch: "@1" is before it */
	struct history *hist = history_new(4, 1 << 20, NULL);
	f->hist = hist;
	history_push(hist, f, NULL, NULL, 0);
	struct snap *empty_s = snap_new();
	struct fabric *empty = fabric_new(empty_s, "none");
	struct evbuffer *out = evbuffer_new();

	/* One request per command, with arguments it accepts. */
	static const struct {
		const char *line;
		const char *want; /* prefix of the first line */
	} good[] = {
		{ "ping", "OK pong" },
		{ "help", "OK commands:" },
		{ "info", "OK gen=" },
		{ "hops h0000 h0015", "OK gen=" },
		{ "path h0000 h0015", "OK gen=" },
		{ "query h0000:h0015", "h0000 0x" },
		{ "hopsbatch h0000:h0001 h0002:h0014", "OK gen=" },
		{ "hopsmatrix h0000 h0005 h0010 h0015", "OK gen=" },
		{ "delaymatrix bytes=4096 h0000 h0005 h0010 h0015", "OK gen=" },
		{ "pathmatrix h0000 h0005 h0010 h0015", "OK gen=" },
		{ "depth", "OK gen=" },
		{ "clusters 1 h0000 h0005", "OK gen=" },
		{ "tree", "OK gen=" },
		{ "tree gone", "OK gen=" },
		{ "switches", "OK gen=" },
		{ "shared h0000 h0005 h0010 h0015", "OK gen=" },
		{ "order h0015 h0000 h0005", "OK gen=" },
		{ "pick 2 h0000 h0005 h0010 h0015", "OK gen=" },
		{ "map stencil:4 h0000*2 h0005*2", "OK gen=" },
		{ "load alltoall h0000*2 h0005 h0010", "OK gen=" },
		{ "load bytes=8 links=max stencil2d:2,2:periodic h0000 h0005 h0010 h0015", "OK gen=" },
		{ "load matrix h0000 h0005 -- 0:1:100 1:0:7", "OK gen=" },
		{ "load xor:1 h0000 h0005 h0010 h0015", "OK gen=" },
		{ "load bitrev h0000 h0005 h0010 h0015", "OK gen=" },
		{ "load random:42 h0000 h0005 h0010", "OK gen=" },
		{ "schedule xor h0000*2 h0005 h0010", "OK gen=" },
		{ "simgrid h0000 h0005 h0015", "OK gen=" },
		{ "resolve h0003", "OK gen=" },
		{ "hosts", "OK gen=" },
		{ "planes", "OK gen=" },
		{ "planes h0003", "OK gen=" },
		{ "plane", "OK plane=default" },
		{ "plane default", "OK plane=default" },
		{ "watch 3", "OK gen=7 changed=1" },
		{ "watch 7 0", "OK gen=7 changed=0" },
		{ "history", "OK gen=" },
		{ "diff 7 7", "OK gen=" },
		{ "diff 7 @9999999999 h0000 h0001", "OK gen=" },
		{ "show h0000", "OK gen=" },
		{ "links state=up", "OK gen=" },
		{ "quit", "OK bye" },
	};
	int covered[64] = { 0 };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		enum query_result r = ask(f, good[i].line, out);
		int ok;
		size_t n;
		const char *head = framed(out, &ok, &n);
		int is_seed = !strncmp(good[i].line, "query", 5);
		CHECK((ok || is_seed) && !strncmp(head, good[i].want, strlen(good[i].want)),
		      "%s -> %.60s (+%zu lines, framed)", good[i].line, head, n);
		CHECK(r == (!strcmp(good[i].line, "quit") ? QUERY_CLOSE : QUERY_OK), "%s: result %d", good[i].line, r);
		char cmd[32];
		sscanf(good[i].line, "%31s", cmd);
		const struct cmd *k = cmd_find(cmd);
		if (k)
			covered[k - cmd_table] = 1;
		/* the head is what the table says the command answers */
		char why[80] = "";
		if (k && k->reply && !strncmp(head, "OK", 2))
			CHECK(head_as_described(head, k->reply, why, sizeof(why)), "%s: its head as cmd.c describes it %s",
			      good[i].line, why);
		else
			CHECK(k && (k->reply || (k->flags & CMD_ADMIN)), "%s: cmd.c describes its reply", good[i].line);
	}
	/* the admin rows answer with the server's state: t_topod_server,
	 * t_topod_shrink and t_topod_ingest exercise them on a real admin socket */
	for (size_t i = 0; i < cmd_count; i++)
		if (!(cmd_table[i].flags & CMD_ADMIN))
			CHECK(covered[i], "command %s is exercised here", cmd_table[i].name);

	/* Arity comes from the table: too few or too many words is USAGE
	 * with the row's usage line (the admin rows' on the admin socket:
	 * t_topod_server). */
	for (size_t i = 0; i < cmd_count; i++) {
		const struct cmd *k = &cmd_table[i];
		if (k->flags & CMD_ADMIN) {
			CHECK(ask(f, k->name, out) == QUERY_UNKNOWN, "%s is left to the server", k->name);
			continue;
		}
		char line[256];
		int ok;
		size_t n;
		if (k->min_args > 0) {
			snprintf(line, sizeof(line), "%s", k->name);
			ask(f, line, out);
			const char *head = framed(out, &ok, &n);
			CHECK(ok && !strncmp(head, "ERR USAGE ", 10) && strstr(head, k->usage),
			      "%s without arguments: %s", k->name, head);
		}
		if (k->max_args >= 0) {
			int len = snprintf(line, sizeof(line), "%s", k->name);
			for (int a = 0; a <= k->max_args; a++)
				len += snprintf(line + len, sizeof(line) - (size_t)len, " 1");
			ask(f, line, out);
			const char *head = framed(out, &ok, &n);
			CHECK(ok && !strncmp(head, "ERR USAGE ", 10), "%s with %d arguments: %s", k->name, k->max_args + 1,
			      head);
		}
		/* Before the first snapshot. */
		snprintf(line, sizeof(line), "%s", k->usage);
		ask(empty, line, out);
		const char *head = framed(out, &ok, &n);
		if (k->flags & CMD_FABRIC)
			CHECK(ok && !strncmp(head, "ERR NOFABRIC ", 13), "%s before any fabric: %s", k->name, head);
		else
			CHECK(ok, "%s before any fabric is answered: %s", k->name, head);
	}

	/* help lists exactly the table's queries. */
	ask(f, "help", out);
	int ok;
	size_t n;
	const char *head = framed(out, &ok, &n);
	int all = 1;
	for (size_t i = 0; i < cmd_count; i++) {
		char w[48];
		snprintf(w, sizeof(w), " %s ", cmd_table[i].name);
		all &= (strstr(head, w) != NULL) == !(cmd_table[i].flags & CMD_ADMIN);
	}
	CHECK(all, "help names every query of the table, no admin row: %s", head);
	CHECK(ask(f, "nosuchcommand", out) == QUERY_UNKNOWN, "an unknown command is left to the caller");

	/* Errors from the answers themselves. */
	static const struct {
		const char *line, *code;
	} bad[] = {
		{ "hops h0000 nosuchhost", "ERR NOTFOUND " },
		{ "pathmatrix h0000 h0000", "ERR DUPLICATE " },
		{ "clusters 99 h0000", "ERR RANGE " },
		{ "query nocolon", "ERR USAGE " },
		{ "hopsbatch h0000", "ERR USAGE " },
		{ "load alltoall", "ERR USAGE " },
		{ "load alltoal h0000 h0001", "ERR USAGE " },
		{ "load stencil2d:3,3 h0000 h0001", "ERR USAGE " },
		{ "load bitrev h0000 h0001 h0002", "ERR USAGE " },
		{ "load xor:2 h0000 h0001", "ERR USAGE " },
		{ "load random:-1 h0000 h0001", "ERR USAGE " },
		{ "load bytes=0 ring h0000 h0001", "ERR USAGE " },
		{ "load ring h0000*0 h0001", "ERR USAGE " },
		{ "load ring h0000*16384 h0001", "ERR TOOMANY " },
		{ "load ring h0000 nosuchhost", "ERR NOTFOUND " },
		{ "load ring h0000 h0001 -- 0:1:5", "ERR USAGE " },
		{ "load matrix h0000 h0001 -- 0:2:5", "ERR USAGE " },
		{ "load matrix h0000 h0001 -- 0:1", "ERR USAGE " },
		{ "diff 7 8", "ERR NOGENERATION " },
		{ "plane rail9", "ERR NOPLANE " },
		{ "watch x", "ERR USAGE " },
		{ "watch 7 3600001", "ERR USAGE " },
		{ "watch 7 -1", "ERR USAGE " },
		{ "planes nosuchhost", "ERR NOTFOUND " },
		{ "diff 7 x", "ERR USAGE " },
		{ "diff @1 7", "ERR NOGENERATION " },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ask(f, bad[i].line, out);
		head = framed(out, &ok, &n);
		CHECK(ok && !strncmp(head, bad[i].code, strlen(bad[i].code)), "%s -> %s", bad[i].line, head);
	}

	evbuffer_free(out);
	fabric_put(f);
	history_free(hist);
	fabric_put(empty);
	return tf_failures ? 1 : 0;
}
