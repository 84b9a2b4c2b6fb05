/*
 * test_http_json.c - the HTTP endpoint's JSON of protocol replies
 * (topod/http_json.c) and its request counters (topod/qstats.c): every
 * reply shape the protocol has, hostile bytes in names, every ERR code's
 * status, and the outcome classes. Built plain and under ASan+UBSan.
 */
#include <string.h>
#include <stdlib.h>

#include <event2/buffer.h>

#include "cmd.h"
#include "http_impl.h"
#include "qstats.h"
#include "tap.h"

/* The JSON of reply, into a static buffer; *status its status. */
static const char *conv(const char *reply, int *status)
{
	static char buf[4096];
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	evbuffer_add(in, reply, strlen(reply));
	*status = http_reply_json(in, out);
	size_t n = evbuffer_copyout(out, buf, sizeof(buf) - 1);
	while (n && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	evbuffer_free(in);
	evbuffer_free(out);
	return buf;
}

/* Valid JSON for our purposes: balanced outside strings, no raw control
 * byte or non-ASCII byte inside one. */
static int json_sane(const char *s)
{
	int depth = 0, in = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (in) {
			if (c < 0x20 || c >= 0x7f)
				return 0;
			if (c == '\\')
				s++;
			else if (c == '"')
				in = 0;
		} else if (c == '"') {
			in = 1;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth < 0)
				return 0;
		}
	}
	return depth == 0 && !in;
}

static void test_shapes(void)
{
	int st;
	const char *j = conv("OK gen=1 src=h0000/HCA-1 dst=h0015/HCA-1 hops=2 lines=2\n"
			     "0x0008f10500000000 in=1 out=3 \"sw-0\"\n0x0008f10500000007 in=3 out=2 \"sw 7\"\n", &st);
	CHECK(st == 200 && json_sane(j), "path: 200, well formed");
	CHECK(strstr(j, "\"head\":{\"gen\":1,\"src\":\"h0000/HCA-1\"") != NULL, "head: numbers as numbers, names as strings");
	CHECK(strstr(j, "{\"kind\":\"0x0008f10500000007\",\"args\":[\"sw 7\"],\"in\":3,\"out\":2}") != NULL,
	      "a line: kind, a quoted positional word with a space, then its keys");
	j = conv("OK gen=1 bytes=0 lines=1\ngeneration=1 kind=served engine=- nodes=36\n", &st);
	CHECK(strstr(j, "{\"generation\":1,\"kind\":\"served\",\"engine\":\"-\",\"nodes\":36}") != NULL,
	      "a line of KEY=VALUE only (history) has no kind word: %s", j);
	j = conv("OK gen=1 lines=1\nhost 0012 parent=0x0a v=007 w=-3 x=1.5 y=1. z=12345678901234567890\n", &st);
	CHECK(strstr(j, "\"args\":[\"0012\"]") && strstr(j, "\"v\":\"007\"") && strstr(j, "\"w\":-3") &&
	      strstr(j, "\"x\":1.5") && strstr(j, "\"y\":\"1.\"") && strstr(j, "\"z\":\"12345678901234567890\""),
	      "numbers only where exact: leading zeros, a trailing dot and 20 digits stay strings: %s", j);
	j = conv("OK lines=0\n", &st);
	CHECK(st == 200 && strstr(j, "\"lines\":[]") && json_sane(j), "no lines: an empty array");
}

static void test_hostile(void)
{
	int st;
	const char *j = conv("OK gen=1 lines=1\nswitch name=\"a\\\\b\x01\xff\" \"unterminated\n", &st);
	CHECK(st == 200 && json_sane(j), "backslash, control and high bytes, an unterminated quote: well formed: %s", j);
	CHECK(strstr(j, "\\u0001") && strstr(j, "\\u00ff") && strstr(j, "a\\\\\\\\b"), "each escaped: %s", j);
	j = conv("OK =x ==\"\" \"\n= \"\n", &st);
	CHECK(json_sane(j), "empty keys and lone quotes: well formed: %s", j);
	j = conv("", &st);
	CHECK(st == 500 && json_sane(j), "no reply at all: 500");
	j = conv("ERR\n", &st);
	CHECK(st == 400 && json_sane(j), "a bare ERR: 400, well formed");
}

static void test_errors(void)
{
	static const struct { const char *line; int status; } e[] = {
		{ "ERR NOTFOUND no host 'x'\n", 400 }, { "ERR USAGE path A B\n", 400 }, { "ERR NOFABRIC none\n", 503 },
		{ "ERR BUSY later\n", 503 },	       { "ERR TOOBIG 9 MiB\n", 413 },	{ "ERR TOOMANY 5000\n", 413 },
		{ "ERR TIMEOUT late\n", 504 },	       { "ERR INTERNAL bug\n", 500 },
	};
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		int st;
		const char *j = conv(e[i].line, &st);
		CHECK(st == e[i].status && json_sane(j) && !strncmp(j, "{\"ok\":false,\"code\":", 19),
		      "%.*s -> %d", (int)strcspn(e[i].line, "\n"), e[i].line, st);
	}
	int st;
	const char *j = conv("ERR NOTFOUND no host, HCA, GUID or LID 'a\"b'\n", &st);
	CHECK(strstr(j, "\"error\":\"no host, HCA, GUID or LID 'a\\\"b'\""), "the text, its quote escaped: %s", j);
}

static void test_qstats(void)
{
	struct qstats q;
	memset(&q, 0, sizeof(q));
	struct evbuffer *b = evbuffer_new();
	evbuffer_add_printf(b, "OK old reply\nERR BUSY x\nERR NOTFOUND y\nOK\n");
	CHECK(qstats_outcome(b, 0) == QS_OK, "OK: ok");
	CHECK(qstats_outcome(b, 13) == QS_REFUSED, "ERR BUSY: refused");
	CHECK(qstats_outcome(b, 24) == QS_ERROR, "ERR NOTFOUND: error");
	CHECK(qstats_outcome(b, 1000) == QS_ERROR, "past the end: error, no read");
	evbuffer_free(b);
	const struct cmd *k = cmd_find("path");
	qstats_note(&q, k, QS_OK, QS_LANE_LOOP, 50000);      /* 50 us */
	qstats_note(&q, NULL, QS_ERROR, QS_LANE_LOOP, 2000000000ull); /* 2 s */
	qstats_note(&q, k, QS_OK, QS_LANE_POOL, 100000000000ull);    /* 100 s: +Inf */
	size_t row = (size_t)(k - cmd_table);
	CHECK(q.n[row][QS_OK] == 2 && q.n[QSTATS_OTHER][QS_ERROR] == 1, "by command and outcome");
	CHECK(q.latency[QS_LANE_LOOP].bucket[0] == 1 && q.latency[QS_LANE_LOOP].bucket[13] == 1 &&
	      q.latency[QS_LANE_POOL].bucket[QSTATS_BUCKETS] == 1 && q.latency[QS_LANE_LOOP].count == 2,
	      "latency buckets: 50 us in the first, 2 s in le=2.5, 100 s in +Inf");
	CHECK(cmd_count <= QSTATS_CMDS, "every command has a row (%zu <= %d)", cmd_count, QSTATS_CMDS);
}

int main(void)
{
	test_shapes();
	test_hostile();
	test_errors();
	test_qstats();
	return TAP_DONE();
}
