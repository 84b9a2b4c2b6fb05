/*
 * test_auth.c - ingest authentication, version 2 (snapshot/auth.h): a proof
 * passes only under the key, the challenge (its nonce and its plane) and the
 * header it was made for, and the body tag only over the same bytes, fed in
 * any chunking.
 */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "tap.h"

static struct snap_key key_of(uint8_t fill)
{
	struct snap_key k;
	memset(k.k, fill, sizeof(k.k));
	k.len = 48;
	return k;
}

/* 0 if the proof passes head and body under key and chal. */
static int check(const struct snap_key *k, const uint8_t *chal, const uint8_t *proof, const uint8_t *buf,
		 size_t len, size_t chunk)
{
	char err[SNAP_ERR_LEN];
	struct snap_auth_body body;
	if (snap_auth_verify_head(k, chal, proof, buf, &body, err))
		return 1;
	for (size_t off = 0; off < len; off += chunk)
		snap_auth_body_update(&body, buf + off, len - off < chunk ? len - off : chunk);
	return snap_auth_body_verify(&body, err) ? 2 : 0;
}

int main(void)
{
	char err[SNAP_ERR_LEN], plane[SNAP_AUTH_PLANE_MAX + 1];
	struct snap_key k = key_of(7), other = key_of(8);
	size_t len = 5000;
	uint8_t *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	memcpy(buf, "TOPOSNAP", 8);

	uint8_t chal[SNAP_AUTH_CHAL_LEN], chal2[SNAP_AUTH_CHAL_LEN], proof[SNAP_AUTH_PROOF_LEN];
	CHECK(!snap_auth_challenge("rail1", chal, err) && !snap_auth_challenge("rail1", chal2, err),
	      "challenges made");
	CHECK(memcmp(chal + 16, chal2 + 16, SNAP_AUTH_NONCE_LEN), "two challenges carry different nonces");
	CHECK(!snap_auth_parse_challenge(chal, plane, err) && !strcmp(plane, "rail1"), "the plane reads back: %s",
	      plane);
	CHECK(snap_auth_challenge("", chal2, err) && snap_auth_challenge("x23456789012345678901234567890123", chal2, err),
	      "no challenge for an empty or 33-byte plane name");
	CHECK(!snap_auth_prove(&k, chal, buf, len, proof, err), "proof made");
	CHECK(check(&k, chal, proof, buf, len, len) == 0, "the proof passes under its key and challenge");
	CHECK(check(&k, chal, proof, buf, len, 7) == 0, "fed in 7-byte chunks too");
	CHECK(check(&other, chal, proof, buf, len, len) == 1, "another key fails at the head");
	uint8_t replay[SNAP_AUTH_CHAL_LEN];
	memcpy(replay, chal, sizeof(replay));
	snap_auth_challenge("rail1", replay, err);
	CHECK(check(&k, replay, proof, buf, len, len) == 1, "a new nonce (a replay) fails at the head");
	uint8_t moved[SNAP_AUTH_CHAL_LEN];
	memcpy(moved, chal, sizeof(moved));
	moved[49] = 'R';
	CHECK(check(&k, moved, proof, buf, len, len) == 1, "another plane with the same nonce fails at the head");
	int head_ok = 1;
	for (size_t i = 0; i < SNAP_HEADER_LEN; i++) {
		buf[i] ^= 1;
		head_ok &= check(&k, chal, proof, buf, len, len) == 1;
		buf[i] ^= 1;
	}
	CHECK(head_ok, "a bit flipped anywhere in the header (magic = kind, generation, length) fails at the head");
	buf[len - 1] ^= 0x80;
	CHECK(check(&k, chal, proof, buf, len, len) == 2, "a bit flipped in the payload fails at the body tag");
	buf[len - 1] ^= 0x80;
	CHECK(check(&k, chal, proof, buf, len - 1, len) == 2, "a shorter body fails at the body tag");
	uint8_t v1[SNAP_AUTH_LEN];
	snap_auth_sign(&k, buf, len, v1);
	CHECK(memcmp(v1 + 16, proof, SNAP_AUTH_TAG_LEN) && memcmp(v1 + 16, proof + 32, SNAP_AUTH_TAG_LEN),
	      "a version 1 tag is neither of the version 2 tags (labels)");
	uint8_t hello[SNAP_AUTH_HELLO_LEN];
	snap_auth_hello(hello);
	CHECK(snap_auth_is_preamble(hello, sizeof(hello)) && snap_auth_version(hello) == 2 &&
		      snap_auth_version(v1) == 1,
	      "the hello and the old preamble share the magic and differ in version");
	memcpy(moved, chal, sizeof(moved));
	moved[49] = '/';
	CHECK(snap_auth_parse_challenge(moved, plane, err) && !strcmp(plane, "?"),
	      "a challenge naming a plane with other characters is refused: %s", err);
	memcpy(moved, "TOPOSNAP", 8);
	CHECK(snap_auth_parse_challenge(moved, plane, err), "something else than a challenge is refused: %s", err);
	CHECK(snap_auth_prove(&k, chal, buf, 10, proof, err), "no proof for less than a header: %s", err);
	free(buf);
	return TAP_DONE();
}
