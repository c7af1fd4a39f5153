/* Reading the caller's sized structs (strobe_init_opts, strobe_activity, the
 * plug-in ops): a struct that starts with a `size` field may come from an
 * older header (smaller: later fields are absent and take their default) or
 * a newer one (larger: fields this library does not know are ignored). These
 * two macros are the only place that compares a size with a field's offset;
 * the library's code never writes offsetof for it by hand. */
#ifndef STROBE_COMMON_OPTS_H
#define STROBE_COMMON_OPTS_H

#include <stddef.h>

/* True when opts is not NULL and its size covers the whole of `field`. */
#define STRB_OPTS_HAS(opts, field)                                                                           \
	((opts) != NULL &&                                                                                   \
	 (size_t)(opts)->size >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field))

/* The caller's `field` when its struct has it, else `fallback`. */
#define STRB_OPTS_GET(opts, field, fallback) (STRB_OPTS_HAS(opts, field) ? (opts)->field : (fallback))

#endif
