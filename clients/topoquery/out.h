/*
 * out.h - output helpers for topoquery: JSON strings and safe text.
 *
 * Names that come from the fabric (switch NodeDescriptions) may hold any
 * byte; output must stay one record per line and valid JSON whatever they
 * contain.
 */
#ifndef TOPOQUERY_OUT_H
#define TOPOQUERY_OUT_H

#include <stdint.h>
#include <stdio.h>

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

#endif
