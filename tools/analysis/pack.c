/* Records packed for random access: see pack.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/pack.h"

void an_pack_init(struct an_packed *p, unsigned nf)
{
	memset(p, 0, sizeof(*p));
	p->nf = nf;
}

static unsigned bits_for(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* v (below 2^w) into the w bits at bit pos of words, which are zero there. */
static void put_bits(uint64_t *words, uint64_t pos, unsigned w, uint64_t v)
{
	if (!w)
		return;
	size_t i = (size_t)(pos >> 6);
	unsigned sh = (unsigned)(pos & 63);
	words[i] |= v << sh;
	if (sh + w > 64)
		words[i + 1] |= v >> (64 - sh);
}

/* The pending records as a block of their own. */
static int flush(struct an_packed *p)
{
	unsigned nf = p->nf, n = p->npending;
	struct an_pblock b = {.at = (uint64_t)p->nwords * 64};
	unsigned rec = 0;
	for (unsigned f = 0; f < nf; f++) {
		uint64_t lo = p->pending[0][f], hi = lo;
		for (unsigned k = 1; k < n; k++) {
			uint64_t v = p->pending[k][f];
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		b.base[f] = lo;
		b.width[f] = (uint8_t)bits_for(hi - lo);
		rec += b.width[f];
	}
	b.bits = (uint16_t)rec;
	size_t words = ((size_t)rec * n + 63) / 64;
	/* one word more than the bits need: a read may look one past them */
	if (!an_grow((void **)&p->words, p->nwords + words, &p->capwords, sizeof(*p->words)) ||
	    !an_grow((void **)&p->blocks, p->nblocks, &p->capblocks, sizeof(*p->blocks)))
		return -ENOMEM;
	memset(p->words + p->nwords, 0, (words + 1) * sizeof(*p->words));
	uint64_t pos = b.at;
	for (unsigned k = 0; k < n; k++)
		for (unsigned f = 0; f < nf; f++) {
			put_bits(p->words, pos, b.width[f], p->pending[k][f] - b.base[f]);
			pos += b.width[f];
		}
	p->nwords += words;
	p->blocks[p->nblocks++] = b;
	p->npending = 0;
	return 0;
}

int an_pack_push(struct an_packed *p, const uint64_t *fields)
{
	memcpy(p->pending[p->npending], fields, p->nf * sizeof(*fields));
	if (++p->npending == AN_PACK_BLOCK) {
		int rc = flush(p);
		if (rc) {
			p->npending--;
			return rc;
		}
	}
	p->n++;
	return 0;
}

int an_pack_end(struct an_packed *p)
{
	int rc = p->npending ? flush(p) : 0;
	if (rc)
		return rc;
	uint64_t *w = realloc(p->words, (p->nwords + 1) * sizeof(*w));
	if (w) {
		p->words = w;
		p->capwords = p->nwords + 1;
	}
	struct an_pblock *b = realloc(p->blocks, (p->nblocks ? p->nblocks : 1) * sizeof(*b));
	if (b) {
		p->blocks = b;
		p->capblocks = p->nblocks ? p->nblocks : 1;
	}
	return 0;
}

size_t an_pack_bytes(const struct an_packed *p)
{
	return p->capwords * sizeof(*p->words) + p->capblocks * sizeof(*p->blocks);
}

void an_pack_free(struct an_packed *p)
{
	free(p->words);
	free(p->blocks);
	an_pack_init(p, p->nf);
}
