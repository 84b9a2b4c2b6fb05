/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire.h - little-endian integer writers and readers shared by the
 * snapshot codec (snapshot.c) and the delta codec (delta.c), so that both
 * formats put bytes on the wire the same way.
 */
#ifndef TOPOD_SNAPSHOT_WIRE_H
#define TOPOD_SNAPSHOT_WIRE_H

#include <stdint.h>

static inline void put8(uint8_t **p, uint8_t v) { *(*p)++ = v; }
static inline void put16(uint8_t **p, uint16_t v) { put8(p, (uint8_t)v); put8(p, (uint8_t)(v >> 8)); }
static inline void put32(uint8_t **p, uint32_t v) { put16(p, (uint16_t)v); put16(p, (uint16_t)(v >> 16)); }
static inline void put64(uint8_t **p, uint64_t v) { put32(p, (uint32_t)v); put32(p, (uint32_t)(v >> 32)); }

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static inline uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

#endif
