/* Process-wide trace metadata set through strobe_metadata_set_*. */
#ifndef STROBE_CORE_METADATA_H
#define STROBE_CORE_METADATA_H

#include "strobe/plugin.h"

/* Calls fn for every entry, under the metadata lock, in the order keys
 * were first set. */
void strb_metadata_foreach(strobe_metadata_cb fn, void *arg);
void strb_metadata_atfork_child(void);
void strb_metadata_clear(void);

#endif
