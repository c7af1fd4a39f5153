#include "core/json_check.h"

#include <string.h>
#include <yajl/yajl_parse.h>

bool strb_json_valid(const char *text)
{
	if (!text)
		return false;
	yajl_handle h = yajl_alloc(NULL, NULL, NULL);
	if (!h)
		return false;
	/* yajl accepts several top-level values only with this flag; without it
	 * a second value is an error, which is what we want. */
	bool ok = yajl_parse(h, (const unsigned char *)text, strlen(text)) == yajl_status_ok &&
	          yajl_complete_parse(h) == yajl_status_ok;
	yajl_free(h);
	return ok;
}
