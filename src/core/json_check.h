/* Validation of caller-supplied JSON text (metadata values, JSON args). */
#ifndef STROBE_CORE_JSON_CHECK_H
#define STROBE_CORE_JSON_CHECK_H

#include <stdbool.h>

/* True when text is exactly one JSON value (surrounding whitespace allowed). */
bool strb_json_valid(const char *text);

#endif
