/* A strict, fast JSON tokenizer: the trace reader's first try at a file.
 *
 * It takes only JSON as RFC 8259 writes it, with strings in well-formed
 * UTF-8, and hands over the same tokens, in the same form, as yajl's
 * callback parser does on that text (numbers as their text, strings
 * decoded). At the first byte it does not take (anything needing the
 * reader's repair of libkineto's defects, or any error) it gives up
 * without handing over anything of the token there, and the reader reads
 * the text again with yajl and the repair pass, which say what is wrong.
 * It does not take what yajl might: a lone surrogate escape, overlong
 * UTF-8, \v or \f as blank, a string of JL_TOKEN_MAX bytes or more, a
 * number longer than JL_NUMBER_MAX, nesting deeper than JL_DEPTH_MAX; the
 * reader's second pass takes those.
 *
 * Text comes in pieces from a source; a token may span pieces. Tokens in
 * a piece are handed over in place (no copy) unless they span its end or
 * hold escapes. Single-threaded; the callbacks run on the calling thread.
 */
#ifndef STROBE_TOOLS_JSON_LEX_H
#define STROBE_TOOLS_JSON_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum jl_tok {
	JL_NULL,
	JL_BOOL, /* len is 1 for true, 0 for false; s is NULL */
	JL_NUMBER,
	JL_STRING,
	JL_KEY,
	JL_START_MAP,
	JL_END_MAP,
	JL_START_ARRAY,
	JL_END_ARRAY,
};

#define JL_DEPTH_MAX  1024
#define JL_TOKEN_MAX  (1u << 20) /* a string's bytes as written, with its quotes */
#define JL_NUMBER_MAX 4096u
/* jl_run's return when the text holds a byte it does not take. */
#define JL_GIVE_UP 1

/* The next piece of text: *n == 0 at the end. Returns 0 or an error, which
 * jl_run returns. The piece stays valid until the next call. */
typedef int (*jl_next_cb)(void *user_arg, const unsigned char **p, size_t *n);

/* One token. decoded says that s was decoded from escapes (only then can it
 * hold a NUL). end is the offset in the text just past the token (for a
 * string, past its closing quote). Returns 0 to go on; anything else stops
 * the run, and jl_run returns it. */
typedef int (*jl_token_cb)(void *user_arg, enum jl_tok t, const char *s, size_t len, bool decoded,
                           uint64_t end);

/* An object where a value may begin: p is its '{', at offset in the text,
 * and e the end of the text in hand. The callback may take the whole
 * object itself, returning its length (with the closing brace, within
 * [p, e)), or return 0 to have it tokenized. Setting *stop (0 on entry)
 * stops the run after the object taken; jl_run returns it. */
typedef size_t (*jl_object_cb)(void *user_arg, const unsigned char *p, const unsigned char *e,
                               uint64_t offset, int *stop);

/* Tokenizes the text that first (n bytes) starts and next goes on with,
 * whose first byte is at offset base. object (may be NULL) is offered
 * each object first. Returns 0 when it was one JSON value and every token
 * was handed over, JL_GIVE_UP, -ENOMEM, or what a callback returned. */
int jl_run(const unsigned char *first, size_t n, uint64_t base, jl_next_cb next, jl_token_cb token,
           jl_object_cb object, void *user_arg);

/* For an object callback, the tokenizer's own scans: where the JSON
 * number at p ends, or NULL when it is not one (as the tokenizer judges
 * it) or may go on past e; and the run of plain string bytes below. */
const unsigned char *jl_number_end(const unsigned char *p, const unsigned char *e);

/* The first byte of [p, e) that a string cannot copy as is: a quote, a
 * backslash, a control byte or a byte of a multibyte character. Sixteen
 * bytes at a time with SSE2 (bytes from 0x80 are negative as signed, so one
 * compare finds them with the control bytes), else eight with bit tricks
 * that are exact for these. */
static inline const unsigned char *jl_plain_run(const unsigned char *p, const unsigned char *e)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
	while (e - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
		                           _mm_cmplt_epi8(v, space));
		int m = _mm_movemask_epi8(hit);
		if (m)
			return p + __builtin_ctz((unsigned)m);
		p += 16;
	}
#else
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	while (e - p >= 8) {
		uint64_t w;
		memcpy(&w, p, sizeof(w));
		uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
		if ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b) | w) & highs)
			break;
		p += 8;
	}
#endif
	while (p < e && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
		p++;
	return p;
}

#endif
