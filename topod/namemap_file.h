/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * namemap_file.h - an infiniband-diags node-name-map file, read whole and
 * bounded (one line per node at most), then parsed by route_namemap_parse().
 */
#ifndef TOPOD_NAMEMAP_FILE_H
#define TOPOD_NAMEMAP_FILE_H

#include "route.h"

/* AN_E_NOTFOUND if the file cannot be opened, AN_E_INVAL if it is too
 * large or unreadable or malformed (err names the line), AN_E_NOMEM. */
int route_namemap_load(const char *path, struct route_namemap **out, char err[AN_ERR_LEN]);

#endif
