/* Records of a few unsigned fields, packed for random access: in blocks
 * of AN_PACK_BLOCK records, each field is kept as its offset from the
 * block's least value of it, in as many bits as the block's largest
 * offset needs. Records that come in roughly the order of their values
 * (times, file order) take a few bytes each instead of 8 per field, and
 * record i is read back without reading any other.
 *
 * Built once (an_pack_push, then an_pack_end), then only read. */
#ifndef STROBE_TOOLS_ANALYSIS_PACK_H
#define STROBE_TOOLS_ANALYSIS_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AN_PACK_BLOCK  64
#define AN_PACK_FIELDS 6

/* One block: where its records' bits start, its least value of each
 * field, each field's width in bits and their sum (a record's). */
struct an_pblock {
	uint64_t at;
	uint64_t base[AN_PACK_FIELDS];
	uint8_t width[AN_PACK_FIELDS];
	uint16_t bits;
};

struct an_packed {
	unsigned nf;     /* fields per record */
	size_t n;        /* records */
	uint64_t *words; /* the blocks' bits, one after another (plus a word, for reads past the end) */
	size_t nwords, capwords;
	struct an_pblock *blocks;
	size_t nblocks, capblocks;
	uint64_t pending[AN_PACK_BLOCK][AN_PACK_FIELDS]; /* the block being filled */
	unsigned npending;
};

/* An empty set of records of nf fields (1 to AN_PACK_FIELDS). */
void an_pack_init(struct an_packed *p, unsigned nf);
/* Appends a record (nf fields); -ENOMEM, with the records before it
 * kept, when out of memory. */
int an_pack_push(struct an_packed *p, const uint64_t *fields);
/* After the last push: packs the last block and hands back spare room. */
int an_pack_end(struct an_packed *p);
/* Bytes held, for the record's cost. */
size_t an_pack_bytes(const struct an_packed *p);
void an_pack_free(struct an_packed *p);

/* The w bits at bit pos of words. */
static inline uint64_t an_pack_bits(const uint64_t *words, uint64_t pos, unsigned w)
{
	if (!w)
		return 0;
	size_t i = (size_t)(pos >> 6);
	unsigned sh = (unsigned)(pos & 63);
	uint64_t v = words[i] >> sh;
	if (sh + w > 64)
		v |= words[i + 1] << (64 - sh);
	return w == 64 ? v : v & ((UINT64_C(1) << w) - 1);
}

/* Record i's first nf fields (i below p->n, after an_pack_end): with nf
 * a constant, the loop unrolls. */
static inline void an_pack_getn(const struct an_packed *p, size_t i, uint64_t *fields, unsigned nf)
{
	const struct an_pblock *b = &p->blocks[i / AN_PACK_BLOCK];
	uint64_t pos = b->at + (uint64_t)b->bits * (i % AN_PACK_BLOCK);
	for (unsigned f = 0; f < nf; f++) {
		fields[f] = b->base[f] + an_pack_bits(p->words, pos, b->width[f]);
		pos += b->width[f];
	}
}

/* Field f of record i alone. */
static inline uint64_t an_pack_field(const struct an_packed *p, size_t i, unsigned f)
{
	const struct an_pblock *b = &p->blocks[i / AN_PACK_BLOCK];
	uint64_t pos = b->at + (uint64_t)b->bits * (i % AN_PACK_BLOCK);
	for (unsigned k = 0; k < f; k++)
		pos += b->width[k];
	return b->base[f] + an_pack_bits(p->words, pos, b->width[f]);
}

/* Record i's fields. */
static inline void an_pack_get(const struct an_packed *p, size_t i, uint64_t *fields)
{
	an_pack_getn(p, i, fields, p->nf);
}

/* int64 to uint64 keeping the order (and back): signed values such as
 * times pack as offsets from their least. */
static inline uint64_t an_pack_s64(int64_t v)
{
	return (uint64_t)v ^ (UINT64_C(1) << 63);
}

static inline int64_t an_unpack_s64(uint64_t u)
{
	return (int64_t)(u ^ (UINT64_C(1) << 63));
}

#endif
