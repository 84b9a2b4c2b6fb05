/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http_json.c - a query-protocol reply as JSON, generically: every reply
 * line is a word followed by KEY=VALUE pairs and positional words
 * (docs/protocol.md), so one conversion serves every command and the JSON
 * can never say something the protocol does not.
 *
 *   OK gen=1 hops=5 lines=2        {"ok":true,"head":{"gen":1,"hops":5,"lines":2},
 *   0x0008... in=1 out=3 "sw-0"     "lines":[{"kind":"0x0008...","args":["sw-0"],"in":1,"out":3}, ...]}
 *
 * A value that is a plain decimal number (no leading zero) becomes a JSON
 * number; everything else, and every positional word, stays a string (a
 * host may be named 0012). Bytes outside printable ASCII are escaped, so
 * the output is valid JSON whatever a NodeDescription holds.
 */
#include "http_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void http_json_string(struct evbuffer *out, const char *s, size_t n)
{
	evbuffer_add(out, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			continue;
		evbuffer_add(out, s + run, i - run);
		if (ch == '"' || ch == '\\')
			evbuffer_add_printf(out, "\\%c", ch);
		else
			evbuffer_add_printf(out, "\\u%04x", ch);
		run = i + 1;
	}
	evbuffer_add(out, s + run, n - run);
	evbuffer_add(out, "\"", 1);
}

static int is_number(const char *s, size_t n)
{
	size_t i = s[0] == '-';
	if (i >= n || !isdigit((unsigned char)s[i]) || (s[i] == '0' && i + 1 < n && s[i + 1] != '.'))
		return 0;
	int dot = 0;
	for (; i < n; i++) {
		if (s[i] == '.' && !dot && i + 1 < n)
			dot = 1;
		else if (!isdigit((unsigned char)s[i]))
			return 0;
	}
	return n < 20;
}

/* The next word of [*p, end): a "quoted" run (quotes dropped) or up to a
 * space. Sets the key (and its length) for KEY=VALUE. 0 at the end. */
static int next_word(const char **p, const char *end, const char **key, size_t *klen, const char **val,
		     size_t *vlen, int *quoted)
{
	const char *s = *p;
	while (s < end && *s == ' ')
		s++;
	if (s >= end)
		return 0;
	*key = NULL;
	*klen = 0;
	const char *w = s;
	while (w < end && *w != ' ' && *w != '=' && *w != '"')
		w++;
	if (w < end && *w == '=' && w > s) {
		*key = s;
		*klen = (size_t)(w - s);
		s = w + 1;
	}
	*quoted = s < end && *s == '"';
	if (*quoted) {
		const char *q = memchr(s + 1, '"', (size_t)(end - s - 1));
		*val = s + 1;
		*vlen = (size_t)((q ? q : end) - s - 1);
		*p = q ? q + 1 : end;
	} else {
		const char *e = memchr(s, ' ', (size_t)(end - s));
		*val = s;
		*vlen = (size_t)((e ? e : end) - s);
		*p = e ? e : end;
	}
	return 1;
}

/* One line as an object. With kind, a first word that is not KEY=VALUE
 * is "kind". */
static void json_line(struct evbuffer *out, const char *s, size_t n, int kind)
{
	const char *p = s, *end = s + n, *key, *val;
	size_t klen, vlen;
	int quoted, first = 1, nargs = 0;
	evbuffer_add(out, "{", 1);
	/* A line that opens with KEY=VALUE (history's) has no kind word. */
	const char *k0 = p;
	if (kind && next_word(&k0, end, &key, &klen, &val, &vlen, &quoted) && !key) {
		evbuffer_add_printf(out, "\"kind\":");
		http_json_string(out, val, vlen);
		first = 0;
		p = k0;
	}
	/* Positional words first, as one array. */
	const char *q = p;
	while (next_word(&q, end, &key, &klen, &val, &vlen, &quoted))
		if (!key) {
			evbuffer_add_printf(out, nargs++ ? "," : (first ? "\"args\":[" : ",\"args\":["));
			http_json_string(out, val, vlen);
		}
	if (nargs) {
		evbuffer_add(out, "]", 1);
		first = 0;
	}
	while (next_word(&p, end, &key, &klen, &val, &vlen, &quoted)) {
		if (!key)
			continue;
		evbuffer_add(out, first ? "" : ",", first ? 0 : 1);
		first = 0;
		http_json_string(out, key, klen);
		evbuffer_add(out, ":", 1);
		if (!quoted && is_number(val, vlen))
			evbuffer_add(out, val, vlen);
		else
			http_json_string(out, val, vlen);
	}
	evbuffer_add(out, "}", 1);
}

void http_json_error(struct evbuffer *out, const char *code, const char *text)
{
	evbuffer_add_printf(out, "{\"ok\":false,\"code\":");
	http_json_string(out, code, strlen(code));
	evbuffer_add_printf(out, ",\"error\":");
	http_json_string(out, text, strlen(text));
	evbuffer_add_printf(out, "}\n");
}

/* What an ERR code means over HTTP: the client's mistake (400), too big
 * (413), topod's state or limits (503, 504). */
static int err_status(const char *code)
{
	static const struct { const char *code; int status; } map[] = {
		{ "NOFABRIC", 503 }, { "BUSY", 503 }, { "NOMEM", 503 }, { "SHUTDOWN", 503 },
		{ "TOOBIG", 413 },   { "TOOMANY", 413 }, { "TIMEOUT", 504 }, { "INTERNAL", 500 },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(code, map[i].code))
			return map[i].status;
	return 400;
}

int http_reply_json(struct evbuffer *in, struct evbuffer *out)
{
	size_t n;
	char *head = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
	if (!head) {
		http_json_error(out, "INTERNAL", "empty reply");
		return 500;
	}
	if (!strncmp(head, "ERR", 3) && (head[3] == ' ' || !head[3])) {
		char code[32];
		const char *c0 = head + 3 + (head[3] == ' ');
		size_t cl = strcspn(c0, " ");
		snprintf(code, sizeof(code), "%.*s", (int)(cl < 31 ? cl : 31), c0);
		const char *text = c0 + cl;
		http_json_error(out, code, *text ? text + 1 : "");
		free(head);
		return err_status(code);
	}
	evbuffer_add_printf(out, "{\"ok\":true,\"head\":");
	json_line(out, head + (n >= 2 ? 2 : n), n >= 2 ? n - 2 : 0, 0);
	free(head);
	evbuffer_add_printf(out, ",\"lines\":[");
	char *line;
	for (int i = 0; (line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF)); i++) {
		if (i)
			evbuffer_add(out, ",\n", 2);
		json_line(out, line, n, 1);
		free(line);
	}
	evbuffer_add_printf(out, "]}\n");
	return 200;
}
