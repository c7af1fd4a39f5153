/* strobe_record: a complete caller-built activity, serialised into the
 * calling thread's buffer. Not as hot as push/pop, but still lock-free. */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "common/opts.h"
#include "core/capture.h"
#include "core/json_check.h"
#include "core/tbuf.h"

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The caller's category, when its struct has the field. */
static const char *category_of(const struct strobe_activity *a)
{
	return STRB_OPTS_GET(a, category, NULL);
}

static int check(const struct strobe_activity *a, size_t *args_bytes)
{
	if (!STRB_OPTS_HAS(a, flow_kind))
		return strb_error(-EINVAL, "strobe_record: activity is NULL or its size field is too small");
	if (!strobe_activity_type_name(a->type))
		return strb_error(-EINVAL, "strobe_record: unknown activity type %d", (int)a->type);
	if (a->end_ns < a->start_ns)
		return strb_error(-EINVAL, "strobe_record: end (%lld) is before start (%lld)",
		                  (long long)a->end_ns, (long long)a->start_ns);
	const char *cat = category_of(a);
	if (cat && strb_category_len(cat) < 0)
		return strb_error(-EINVAL, "strobe_record: category is empty or longer than %d bytes",
		                  STRB_CATEGORY_MAX);
	size_t count = STRB_OPTS_GET(a, arg_count, 0);
	if (count && !a->args)
		return strb_error(-EINVAL, "strobe_record: arg_count is %zu but args is NULL", count);
	if (count > 4096)
		return strb_error(-EINVAL, "strobe_record: %zu args is more than the 4096 allowed", count);
	size_t bytes = 0;
	for (size_t i = 0; i < count; i++) {
		const struct strobe_arg *arg = &a->args[i];
		if (!arg->key || strlen(arg->key) > UINT16_MAX)
			return strb_error(-EINVAL, "strobe_record: arg %zu has a NULL or over-long key", i);
		bytes += sizeof(struct strb_rec_arg) + pad8(strlen(arg->key));
		switch (arg->kind) {
		case STROBE_ARG_I64:
		case STROBE_ARG_U64:
		case STROBE_ARG_F64:
		case STROBE_ARG_BOOL:
			break;
		case STROBE_ARG_JSON:
			if (!arg->value.str || !strb_json_valid(arg->value.str))
				return strb_error(STROBE_E_BAD_JSON,
				                  "strobe_record: arg \"%s\" is not valid JSON", arg->key);
			/* fall through */
		case STROBE_ARG_STRING:
			if (!arg->value.str || strlen(arg->value.str) > (1u << 24))
				return strb_error(-EINVAL,
				                  "strobe_record: arg \"%s\" has a NULL or over-long value",
				                  arg->key);
			bytes += pad8(strlen(arg->value.str));
			break;
		default:
			return strb_error(-EINVAL, "strobe_record: arg \"%s\" has unknown kind %d", arg->key,
			                  (int)arg->kind);
		}
	}
	*args_bytes = bytes;
	return 0;
}

int strobe_record(const struct strobe_activity *a)
{
	size_t args_bytes = 0;
	int rc = check(a, &args_bytes);
	if (rc)
		return rc;
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return strb_error(STROBE_E_STATE, "strobe_record: no trace is running");
	size_t name_len = a->name ? strnlen(a->name, STRB_NAME_MAX + 1) : 0;
	if (name_len > STRB_NAME_MAX) {
		name_len = STRB_NAME_MAX;
		strb_tbuf_count(&b->truncated);
	}
	const char *cat = category_of(a);
	size_t cat_len = cat ? (size_t)strb_category_len(cat) : 0; /* checked above */
	size_t payload = sizeof(struct strb_rec_activity) + args_bytes + pad8(cat_len);
	size_t total = sizeof(struct strb_rec) + payload + pad8(name_len);
	if (total > UINT32_MAX)
		return strb_error(-EINVAL, "strobe_record: activity is too large");
	struct strb_rec *r = strb_tbuf_reserve(b, total);
	if (!r)
		return strb_error(-ENOSPC, "strobe_record: capture buffer budget exhausted (event dropped)");
	r->word = strb_rec_word(STRB_REC_ACTIVITY, 0);
	r->reserved = 0;
	r->name_len = (uint16_t)name_len;
	r->aux = (uint32_t)payload;

	struct strb_rec_activity *ra = (struct strb_rec_activity *)(r + 1);
	size_t count = STRB_OPTS_GET(a, arg_count, 0);
	*ra = (struct strb_rec_activity){
	    .start_ns = a->start_ns,
	    .end_ns = a->end_ns,
	    .device = a->device,
	    .resource = a->resource,
	    .id = a->id,
	    .linked_id = a->linked_id,
	    .flow_id = a->flow_id,
	    .type = (uint32_t)a->type,
	    .flags = a->flags,
	    .flow_kind = (uint32_t)a->flow_kind,
	    .arg_count = (uint32_t)count,
	    .category_len = (uint32_t)cat_len,
	};
	uint8_t *p = (uint8_t *)(ra + 1);
	for (size_t i = 0; i < count; i++) {
		const struct strobe_arg *arg = &a->args[i];
		struct strb_rec_arg *out = (struct strb_rec_arg *)p;
		size_t klen = strlen(arg->key);
		bool is_str = arg->kind == STROBE_ARG_STRING || arg->kind == STROBE_ARG_JSON;
		size_t slen = is_str ? strlen(arg->value.str) : 0;
		*out = (struct strb_rec_arg){
		    .kind = (uint32_t)arg->kind, .key_len = (uint16_t)klen, .str_len = (uint32_t)slen};
		switch (arg->kind) {
		case STROBE_ARG_I64:
			out->v.i64 = arg->value.i64;
			break;
		case STROBE_ARG_U64:
			out->v.u64 = arg->value.u64;
			break;
		case STROBE_ARG_F64:
			out->v.f64 = arg->value.f64;
			break;
		case STROBE_ARG_BOOL:
			out->v.b = arg->value.b;
			break;
		default:
			break;
		}
		p += sizeof(*out);
		memcpy(p, arg->key, klen);
		p += pad8(klen);
		if (is_str) {
			memcpy(p, arg->value.str, slen);
			p += pad8(slen);
		}
	}
	if (cat_len) {
		memcpy(p, cat, cat_len);
		p += pad8(cat_len);
	}
	if (name_len)
		memcpy(p, a->name, name_len);
	strb_tbuf_publish(b);
	return 0;
}
