/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * out.h - output helpers for topoquery: JSON strings and safe text.
 *
 * Names that come from the fabric (switch NodeDescriptions) may hold any
 * byte; output must stay one record per line and valid JSON whatever they
 * contain.
 */
#ifndef TOPOQUERY_OUT_H
#define TOPOQUERY_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tii.h"

/* s as a JSON string with its quotes. Control bytes, '"', '\' and bytes
 * >= 0x80 are escaped (\u00XX: bytes read as Latin-1, so the output is
 * ASCII and always valid JSON). */
void json_str(FILE *f, const char *s);
/* "0x%016llx" as a JSON string. */
void json_guid(FILE *f, uint64_t g);
/* s for text output: bytes outside printable ASCII, '"' and '\' as \xHH
 * (the protocol's own escaping), so a name is one word-safe field when
 * quoted. */
void text_str(FILE *f, const char *s);

/* Switch names next to GUIDs, which alone name no cable a person can find:
 * topod's `switches` (docs/protocol.md), asked once.
 * An older topod, or any failure, leaves the table empty and GUIDs are
 * printed alone, as before. */
struct swnames {
	struct tii_switch_name *v;
	size_t n;
};
void swnames_get(tii_t *t, struct swnames *s);
void swnames_free(struct swnames *s);
/* Text: "NAME (0xGUID) port P", or "0xGUID:P" without a name. */
void text_port(FILE *f, const struct swnames *s, uint64_t guid, int port);
/* JSON: the name as a string, or null. */
void json_swname(FILE *f, const struct swnames *s, uint64_t guid);

#endif
