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

/* Tokenizes the text that first (n bytes) starts and next goes on with,
 * whose first byte is at offset base. Returns 0 when it was one JSON value
 * and every token was handed over, JL_GIVE_UP, -ENOMEM, or what a callback
 * returned. */
int jl_run(const unsigned char *first, size_t n, uint64_t base, jl_next_cb next, jl_token_cb token,
           void *user_arg);

#endif
