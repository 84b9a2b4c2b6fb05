/*
 * fuzz_query.c - libFuzzer harness for topod's request lines past the
 * splitter: every command of the table (light and heavy) answered by
 * query_answer() from a 16-host two-level tree with a history, as
 * test_query.c sets it up. Each line of the input is one request. Every
 * reply must be framed as the protocol says: one "ERR CODE text" line, or
 * "OK ..." followed by exactly the lines its lines= announces (none
 * without it), each ending in '\n' (the seed `query` command excepted:
 * it answers in ibtracert's words).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cmd.h"
#include "fabric.h"
#include "history.h"
#include "proto.h"
#include "query.h"
#include "store.h"
#include "testfab.h"

static struct fabric *fab;

static void setup(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	if (fabric_index_build(s, NULL, 1, &x, err))
		abort();
	fab = fabric_new(s, "fuzz");
	fab->index = x;
	s->generation = 7;
	s->timestamp = 5000000;
	fab->hist = history_new(4, 1 << 20, NULL);
	history_push(fab->hist, fab, NULL, NULL, 0);
}

/* The reply's framing; aborts on a broken one. */
static void check_framing(struct evbuffer *out, int seed)
{
	size_t len = evbuffer_get_length(out);
	char *all = malloc(len + 1);
	evbuffer_remove(out, all, len);
	all[len] = '\0';
	if (!len || all[len - 1] != '\n' || memchr(all, '\0', len))
		abort();
	if (!seed) {
		char *nl = strchr(all, '\n');
		*nl = '\0';
		size_t n = 0;
		for (char *p = nl + 1; *p; p++)
			n += *p == '\n';
		const char *lk = strstr(all, " lines=");
		if (!strncmp(all, "OK", 2) && (all[2] == ' ' || all[2] == '\0')) {
			if (lk ? strtoul(lk + 7, NULL, 10) != n : n != 0)
				abort();
		} else if (strncmp(all, "ERR ", 4) || n != 0) {
			abort();
		}
	}
	free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!fab)
		setup();
	static struct proto_req req;
	struct evbuffer *out = evbuffer_new();
	const uint8_t *p = data, *end = data + size;
	for (int k = 0; k < 8 && p < end; k++) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		if (n <= PROTO_LINE_MAX) {
			char *line = malloc(n + 1);
			memcpy(line, p, n);
			line[n] = '\0';
			const char *why;
			if (!proto_split(line, n, &req, &why)) {
				enum query_result r = query_answer(fab, &req, out);
				if (r == QUERY_UNKNOWN)
					evbuffer_drain(out, evbuffer_get_length(out));
				else
					check_framing(out, !strcmp(req.cmd, "query"));
			}
			free(line);
		}
		p = nl ? nl + 1 : end;
	}
	evbuffer_free(out);
	return 0;
}
