/* Unsigned LEB128 varints and zigzag coding: the packed stores (the
 * library's activity store, strobe summary's complete events) and the
 * Perfetto encoder write them. Decoding trusts its input: it reads only
 * bytes strb_varint_put wrote. */
#ifndef STROBE_COMMON_VARINT_H
#define STROBE_COMMON_VARINT_H

#include <stdint.h>

#define STRB_VARINT_MAX 10 /* bytes a 64-bit value takes at most */

/* v at p; past its last byte. */
static inline uint8_t *strb_varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* The value at *pp, *pp moved past it. */
static inline uint64_t strb_varint_get(const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint64_t v = *p++;
	if (v >= 0x80) {
		v &= 0x7f;
		for (unsigned s = 7;; s += 7) {
			uint64_t b = *p++;
			v |= (b & 0x7f) << s;
			if (b < 0x80)
				break;
		}
	}
	*pp = p;
	return v;
}

/* A difference of two uint64 (taken as int64) with small magnitudes small. */
static inline uint64_t strb_zigzag(uint64_t d)
{
	return (d << 1) ^ (0 - (d >> 63));
}

static inline uint64_t strb_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

#endif
