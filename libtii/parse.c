/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parse.c - strict parsing of reply fields: key=value headers, numbers,
 * GUIDs, \xHH-escaped strings, and the check of host names we send.
 *
 * Everything a server sends is untrusted: numbers must be whole, in range
 * and unsigned where the protocol says so, or the reply is TII_E_PROTO.
 */
#include "tii_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"

int tii__parse_u64(const char *s, int base, uint64_t *v)
{
	if (!s || !*s)
		return TII_E_PROTO;
	for (const char *p = s; *p; p++)
		if (util_hexval((unsigned char)*p) < 0 || util_hexval((unsigned char)*p) >= base)
			return TII_E_PROTO;
	errno = 0;
	char *end;
	unsigned long long x = strtoull(s, &end, base);
	if (errno || *end)
		return TII_E_PROTO;
	*v = x;
	return 0;
}

int tii__parse_long(const char *s, long min, long max, long *v)
{
	if (!s || !*s)
		return TII_E_PROTO;
	const char *p = s;
	if (*p == '-')
		p++;
	if (!*p)
		return TII_E_PROTO;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return TII_E_PROTO;
	errno = 0;
	char *end;
	long x = strtol(s, &end, 10);
	if (errno || *end || x < min || x > max)
		return TII_E_PROTO;
	*v = x;
	return 0;
}

int tii__parse_us(const char *s, double *seconds)
{
	if (!s)
		return TII_E_PROTO;
	if (!strcmp(s, "-")) {
		*seconds = -1;
		return 0;
	}
	char *end;
	double us = strtod(s, &end);
	if (*end || end == s || !(us >= 0 && us < 1e15))
		return TII_E_PROTO;
	*seconds = us * 1e-6;
	return 0;
}

int tii__parse_guid(const char *s, uint64_t *v)
{
	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || strlen(s + 2) > 16)
		return TII_E_PROTO;
	return tii__parse_u64(s + 2, 16, v);
}

char *tii__word(char **p)
{
	char *s = *p;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s) {
		*p = s;
		return NULL;
	}
	char *w = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return w;
}

int tii__unescape(char *s)
{
	char *o = s;
	for (const char *p = s; *p; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		if (p[1] != 'x' || util_hexval((unsigned char)p[2]) < 0 || util_hexval((unsigned char)p[3]) < 0)
			return TII_E_PROTO;
		int c = util_hexval((unsigned char)p[2]) * 16 + util_hexval((unsigned char)p[3]);
		if (c == 0)
			break;   /* an escaped NUL ends the C string */
		*o++ = (char)c;
		p += 3;
	}
	*o = '\0';
	return 0;
}

int tii__kv_parse(char *s, struct tii__kv *kv)
{
	kv->n = 0;
	kv->row = NULL;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return 0;
		char *w = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '=')
			s++;
		if (*s != '=') {
			/* a bare word ("OK pong"): skip it */
			while (*s && *s != ' ' && *s != '\t')
				s++;
			continue;
		}
		*s++ = '\0';
		char *v = s;
		if (*s == '"') {
			v = ++s;
			/* topod escapes '"' inside quotes, so the next one ends it */
			char *q = strchr(s, '"');
			if (!q)
				return TII_E_PROTO;
			*q = '\0';
			s = q + 1;
			if (*s && *s != ' ' && *s != '\t')
				return TII_E_PROTO;
			if (tii__unescape(v))
				return TII_E_PROTO;
		} else {
			while (*s && *s != ' ' && *s != '\t')
				s++;
			if (*s)
				*s++ = '\0';
		}
		if (kv->n == TII_KV_MAX)
			return TII_E_PROTO;
		kv->key[kv->n] = w;
		kv->val[kv->n] = v;
		kv->n++;
	}
}

const char *tii__kv_get(const struct tii__kv *kv, const char *key)
{
	if (kv->row && !tii__cmd_reads(kv->row, key))
		return NULL;   /* a key cmds.c does not declare for this head */
	for (size_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->key[i], key))
			return kv->val[i];
	return NULL;
}

int tii__kv_u64(const struct tii__kv *kv, const char *key, uint64_t *v)
{
	const char *s = tii__kv_get(kv, key);
	if (!s)
		return TII_E_PROTO;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return tii__parse_guid(s, v);
	return tii__parse_u64(s, 10, v);
}

int tii__kv_int(const struct tii__kv *kv, const char *key, long min, long max, long *v)
{
	return tii__parse_long(tii__kv_get(kv, key), min, max, v);
}

int tii__check_name(const char *s)
{
	if (!s || !*s)
		return TII_E_INVAL;
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++) {
		/* A space or tab would split the argument, a control byte is
		 * refused by topod, and bytes >= 0x80 never name a host. */
		if (*p <= 0x20 || *p >= 0x7f)
			return TII_E_INVAL;
		if (n >= TII_NAME_MAX)
			return TII_E_INVAL;
	}
	return 0;
}

int tii__grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 16;
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return TII_E_NOMEM;
		nc *= 2;
	}
	void *q = realloc(*p, nc * elem);
	if (!q)
		return TII_E_NOMEM;
	*p = q;
	*cap = nc;
	return 0;
}
