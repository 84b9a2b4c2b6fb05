/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * out.c - see out.h.
 */
#include "out.h"

#include <inttypes.h>

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

void json_guid(FILE *f, uint64_t g)
{
	fprintf(f, "\"0x%016" PRIx64 "\"", g);
}

void text_str(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
}

void swnames_get(tii_t *t, struct swnames *s)
{
	s->v = NULL;
	s->n = 0;
	if (tii_get_switch_names(t, &s->v, &s->n)) {
		s->v = NULL;
		s->n = 0;
	}
}

void swnames_free(struct swnames *s)
{
	tii_switch_names_free(s->v, s->n);
	s->v = NULL;
	s->n = 0;
}

/* Text: "NAME (0xGUID)", or "0xGUID" for a node without a name. */
static void text_node(FILE *f, const struct swnames *s, uint64_t guid)
{
	const char *nm = tii_switch_name_of(s->v, s->n, guid);
	if (nm) {
		text_str(f, nm);
		fprintf(f, " (0x%016" PRIx64 ")", guid);
	} else {
		fprintf(f, "0x%016" PRIx64, guid);
	}
}

void text_port(FILE *f, const struct swnames *s, uint64_t guid, int port)
{
	if (tii_switch_name_of(s->v, s->n, guid)) {
		text_node(f, s, guid);
		fprintf(f, " port %d", port);
	} else {
		fprintf(f, "0x%016" PRIx64 ":%d", guid, port);
	}
}

void json_swname(FILE *f, const struct swnames *s, uint64_t guid)
{
	const char *nm = tii_switch_name_of(s->v, s->n, guid);
	if (nm)
		json_str(f, nm);
	else
		fputs("null", f);
}
