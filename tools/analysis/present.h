/* The three presentations of a read trace (columns.h): strobe summary's
 * text and JSON, and strobe report's HTML page. */
#ifndef STROBE_TOOLS_PRESENT_H
#define STROBE_TOOLS_PRESENT_H

#include <stdio.h>

#include "analysis/columns.h"

/* Each returns 0 or -ENOMEM. */
int an_print_text(const struct an_view *v, FILE *out);
int an_print_json(const struct an_view *v, FILE *out);
/* s escaped for HTML element content and quoted attributes. */
void an_html_escape(FILE *p, const char *s);
/* The report's CSS. */
extern const char an_html_style[];
/* The page, NUL-terminated, in *page (free it) and its length in *len. */
int an_html_page(const struct an_view *v, char **page, size_t *len);

#endif
