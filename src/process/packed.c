/* A trace packed into one block of bytes with no pointers, and back
 * (packed.h). */
#include "process/packed.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_check.h"

_Static_assert(sizeof(struct strb_pack_header) % 8 == 0, "parts stay 8-byte aligned");
_Static_assert(sizeof(struct strb_pack_act) % 8 == 0, "parts stay 8-byte aligned");
_Static_assert(sizeof(struct strb_pack_arg) % 8 == 0, "parts stay 8-byte aligned");
_Static_assert(sizeof(struct strb_pack_res) % 8 == 0, "parts stay 8-byte aligned");

/* The GPU counts a block carries (header.stats, in this order). */
static const size_t stat_at[STRB_PACK_STATS] = {
    offsetof(struct strb_trace_stats, gpu_records),
    offsetof(struct strb_trace_stats, gpu_out_of_window),
    offsetof(struct strb_trace_stats, gpu_dropped_records),
    offsetof(struct strb_trace_stats, gpu_rejected_buffers),
    offsetof(struct strb_trace_stats, gpu_discarded_buffers),
    offsetof(struct strb_trace_stats, gpu_aged_buffers),
    offsetof(struct strb_trace_stats, gpu_unmatched_correlations),
    offsetof(struct strb_trace_stats, gpu_launches),
    offsetof(struct strb_trace_stats, gpu_launches_without_kernel),
    offsetof(struct strb_trace_stats, gpu_overlap_moved),
};

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ---- packing ------------------------------------------------------------ */

struct packer {
	/* Strings: offsets into the blob, and a hash set of their ids. */
	char *blob;
	size_t blob_len, blob_cap;
	uint32_t *offs; /* offs[i] begins string i; offs[count] ends the last */
	size_t count, offs_cap;
	uint32_t *slots; /* ids, 0 = empty */
	size_t slot_cap;
	/* The activities and args packed, newest first. */
	struct strb_pack_act *acts;
	size_t nacts, acts_cap;
	struct strb_pack_arg *args;
	size_t nargs, args_cap;
	bool oom;
};

static bool rehash(struct packer *k)
{
	size_t cap = k->slot_cap ? k->slot_cap * 2 : 1024;
	uint32_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t id = 1; id < k->count; id++) {
		size_t i = strb_hash_bytes(k->blob + k->offs[id], k->offs[id + 1] - k->offs[id]) & (cap - 1);
		while (slots[i])
			i = (i + 1) & (cap - 1);
		slots[i] = (uint32_t)id;
	}
	free(k->slots);
	k->slots = slots;
	k->slot_cap = cap;
	return true;
}

/* The id of s (NULL: 0), added when new; *added grows by its bytes. */
static uint32_t intern(struct packer *k, const char *s, size_t *added)
{
	if (!s || k->oom)
		return 0;
	size_t n = strlen(s);
	if (k->count == 0) {
		/* String 0 is none: empty, never looked up. */
		if (!strb_grow_array((void **)&k->offs, &k->offs_cap, 2, sizeof(*k->offs)))
			goto oom;
		k->offs[0] = k->offs[1] = 0;
		k->count = 1;
	}
	if ((k->count + 1) * 2 > k->slot_cap && !rehash(k))
		goto oom;
	size_t i = strb_hash_bytes(s, n) & (k->slot_cap - 1);
	for (; k->slots[i]; i = (i + 1) & (k->slot_cap - 1)) {
		uint32_t id = k->slots[i];
		if (k->offs[id + 1] - k->offs[id] == n && !memcmp(k->blob + k->offs[id], s, n))
			return id;
	}
	if (k->blob_len + n > UINT32_MAX || k->count >= UINT32_MAX - 1 ||
	    !strb_grow_array((void **)&k->blob, &k->blob_cap, k->blob_len + n + 1, 1) ||
	    !strb_grow_array((void **)&k->offs, &k->offs_cap, k->count + 2, sizeof(*k->offs)))
		goto oom;
	memcpy(k->blob + k->blob_len, s, n);
	k->blob_len += n;
	uint32_t id = (uint32_t)k->count++;
	k->offs[k->count] = (uint32_t)k->blob_len;
	k->slots[i] = id;
	*added += n + sizeof(uint32_t);
	return id;
oom:
	k->oom = true;
	return 0;
}

static void pack_arg(struct packer *k, struct strb_pack_arg *out, const struct strobe_arg *a, size_t *added)
{
	*out = (struct strb_pack_arg){.key = intern(k, a->key, added), .kind = (uint32_t)a->kind};
	switch (a->kind) {
	case STROBE_ARG_I64:
		out->v.i64 = a->value.i64;
		break;
	case STROBE_ARG_U64:
		out->v.u64 = a->value.u64;
		break;
	case STROBE_ARG_F64:
		out->v.f64 = a->value.f64;
		break;
	case STROBE_ARG_BOOL:
		out->v.b = a->value.b;
		break;
	default:
		out->v.str = intern(k, a->value.str, added);
		break;
	}
}

/* Activity i and its args, appended; the bytes they add. */
static size_t pack_act(struct packer *k, const struct strobe_trace *t, size_t i)
{
	struct strb_act_ref r;
	struct strb_arg_scratch scratch;
	const struct strobe_arg *args;
	size_t n = strb_trace_get_args(t, i, &r, &scratch, &args);
	const struct strobe_activity *a = r.a;
	size_t added = sizeof(struct strb_pack_act) + n * sizeof(struct strb_pack_arg);
	if (!strb_grow_array((void **)&k->acts, &k->acts_cap, k->nacts + 1, sizeof(*k->acts)) ||
	    !strb_grow_array((void **)&k->args, &k->args_cap, k->nargs + n, sizeof(*k->args))) {
		k->oom = true;
		return 0;
	}
	struct strb_pack_act *p = &k->acts[k->nacts++];
	*p = (struct strb_pack_act){
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
	    .arg_count = (uint32_t)n,
	    .first_arg = k->nargs,
	};
	p->name = intern(k, a->name, &added);
	p->category = intern(k, a->category, &added);
	for (size_t j = 0; j < n; j++)
		pack_arg(k, &k->args[k->nargs++], &args[j], &added);
	return added;
}

static void packer_free(struct packer *k)
{
	free(k->blob);
	free(k->offs);
	free(k->slots);
	free(k->acts);
	free(k->args);
}

int strb_pack_trace(const struct strobe_trace *t, size_t limit, void **out, size_t *len)
{
	struct packer k = {0};
	struct strb_pack_header h = {.version = STRB_PACK_VERSION, .size = sizeof(h), .gpu = t->stats.gpu};
	memcpy(h.magic, STRB_PACK_MAGIC, sizeof(h.magic));
	/* The rows and metadata first: they are kept whatever the limit. */
	size_t bytes = sizeof(h) + 16;
	struct strb_pack_res *res = calloc(t->res_count ? t->res_count : 1, sizeof(*res));
	if (!res)
		return -ENOMEM;
	for (size_t i = 0; i < t->res_count; i++) {
		const struct strobe_resource *r = &t->res[i];
		res[i] = (struct strb_pack_res){.kind = (uint32_t)r->kind,
		                                .device = r->device,
		                                .resource = r->resource,
		                                .sort_index = r->sort_index};
		res[i].name = intern(&k, r->name, &bytes);
		res[i].label = intern(&k, r->label, &bytes);
		bytes += sizeof(*res);
	}
	struct strb_pack_arg *meta = calloc(t->meta_count ? t->meta_count : 1, sizeof(*meta));
	if (!meta) {
		free(res);
		packer_free(&k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->meta_count; i++) {
		pack_arg(&k, &meta[i], &t->meta[i], &bytes);
		bytes += sizeof(*meta);
	}
	h.device_properties = intern(&k, t->device_properties, &bytes);
	/* Then the activities, newest first, while they fit. */
	size_t i = t->count;
	while (i > 0 && !k.oom) {
		size_t acts = k.nacts, args = k.nargs, blob = k.blob_len, strings = k.count;
		size_t added = pack_act(&k, t, i - 1);
		if (bytes + added > limit && !k.oom) {
			/* It does not fit: forget it and its strings. */
			k.nacts = acts;
			k.nargs = args;
			while (k.count > strings) {
				uint32_t id = (uint32_t)--k.count;
				for (size_t s = 0; s < k.slot_cap; s++)
					if (k.slots[s] == id)
						k.slots[s] = 0;
			}
			k.blob_len = blob;
			break;
		}
		bytes += added;
		i--;
	}
	if (!k.count)
		intern(&k, "", &bytes); /* string 0 is always there */
	if (k.oom) {
		free(res);
		free(meta);
		packer_free(&k);
		return -ENOMEM;
	}
	h.left_out = i;
	for (size_t s = 0; s < STRB_PACK_STATS; s++)
		memcpy(&h.stats[s], (const char *)&t->stats + stat_at[s], sizeof(uint64_t));
	h.nstrings = (uint32_t)k.count;
	h.blob = k.blob_len;
	h.nacts = (uint32_t)k.nacts;
	h.nmeta = (uint32_t)t->meta_count;
	h.nargs = (uint32_t)(k.nargs + t->meta_count);
	h.nres = (uint32_t)t->res_count;
	size_t offs_bytes = pad8((k.count + 1) * sizeof(uint32_t));
	h.bytes = sizeof(h) + offs_bytes + pad8(k.blob_len) + k.nacts * sizeof(struct strb_pack_act) +
	          h.nargs * sizeof(struct strb_pack_arg) + h.nres * sizeof(struct strb_pack_res);
	uint8_t *b = calloc(1, h.bytes);
	if (!b) {
		free(res);
		free(meta);
		packer_free(&k);
		return -ENOMEM;
	}
	uint8_t *p = b;
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	memcpy(p, k.offs, (k.count + 1) * sizeof(uint32_t));
	p += offs_bytes;
	memcpy(p, k.blob, k.blob_len);
	p += pad8(k.blob_len);
	/* Oldest first, as the trace had them. */
	for (size_t j = k.nacts; j-- > 0;) {
		memcpy(p, &k.acts[j], sizeof(k.acts[j]));
		p += sizeof(k.acts[j]);
	}
	if (k.nargs) /* k.args is NULL when no activity has args */
		memcpy(p, k.args, k.nargs * sizeof(*k.args));
	p += k.nargs * sizeof(*k.args);
	memcpy(p, meta, t->meta_count * sizeof(*meta));
	p += t->meta_count * sizeof(*meta);
	memcpy(p, res, t->res_count * sizeof(*res));
	free(res);
	free(meta);
	packer_free(&k);
	*out = b;
	*len = h.bytes;
	return 0;
}

/* ---- unpacking ------------------------------------------------------------ */

struct unpacker {
	const struct strb_pack_header *h;
	const uint32_t *offs;
	const char *blob;
	const struct strb_pack_act *acts;
	const struct strb_pack_arg *args;
	const struct strb_pack_res *res;
	char *err;
	size_t errlen;
};

static int bad(struct unpacker *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct unpacker *u, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (u->errlen)
		vsnprintf(u->err, u->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Lays the parts out over the block, checking that they fit it exactly. */
static int layout(struct unpacker *u, const uint8_t *b, size_t len)
{
	const struct strb_pack_header *h = (const void *)b;
	if (len < sizeof(*h) || memcmp(h->magic, STRB_PACK_MAGIC, sizeof(h->magic)))
		return bad(u, "it does not begin with %s", STRB_PACK_MAGIC);
	if (h->version != STRB_PACK_VERSION || h->size != sizeof(*h))
		return bad(u,
		           "version %" PRIu32 " with a %" PRIu32 "-byte header; this strobe reads version %d",
		           h->version, h->size, STRB_PACK_VERSION);
	if (h->bytes != len)
		return bad(u, "it says it has %" PRIu64 " bytes, but %zu are there", h->bytes, len);
	if (!h->nstrings || h->nmeta > h->nargs || h->blob > len)
		return bad(u,
		           "its counts are inconsistent (%" PRIu32 " strings, %" PRIu32
		           " metadata entries of %" PRIu32 " args)",
		           h->nstrings, h->nmeta, h->nargs);
	/* Counts are 32-bit and the parts' sizes small: no sum overflows. */
	uint64_t need = sizeof(*h) + pad8(((uint64_t)h->nstrings + 1) * sizeof(uint32_t)) + pad8(h->blob) +
	                (uint64_t)h->nacts * sizeof(struct strb_pack_act) +
	                (uint64_t)h->nargs * sizeof(struct strb_pack_arg) +
	                (uint64_t)h->nres * sizeof(struct strb_pack_res);
	if (need != len)
		return bad(u, "its parts take %" PRIu64 " bytes, but it has %zu", need, len);
	u->h = h;
	u->offs = (const void *)(b + sizeof(*h));
	u->blob = (const char *)u->offs + pad8(((size_t)h->nstrings + 1) * sizeof(uint32_t));
	u->acts = (const void *)(u->blob + pad8(h->blob));
	u->args = (const void *)(u->acts + h->nacts);
	u->res = (const void *)(u->args + h->nargs);
	if (u->offs[0] != 0 || u->offs[h->nstrings] != h->blob)
		return bad(u, "its string table does not span its text");
	for (uint32_t i = 0; i < h->nstrings; i++)
		if (u->offs[i + 1] < u->offs[i])
			return bad(u, "string %" PRIu32 " ends before it begins", i);
	return 0;
}

static int check_string(struct unpacker *u, uint64_t id, const char *what, uint64_t index)
{
	if (id >= u->h->nstrings)
		return bad(u, "%s %" PRIu64 " names string %" PRIu64 ", of %" PRIu32, what, index, id,
		           u->h->nstrings);
	return 0;
}

static int check_arg(struct unpacker *u, const struct strb_pack_arg *a, uint64_t index)
{
	if (a->kind > STROBE_ARG_JSON)
		return bad(u, "arg %" PRIu64 " has kind %" PRIu32 ", which is none", index, a->kind);
	if (!a->key || check_string(u, a->key, "arg", index))
		return bad(u, "arg %" PRIu64 " has no key", index);
	if (a->kind != STROBE_ARG_STRING && a->kind != STROBE_ARG_JSON)
		return 0;
	if (!a->v.str || check_string(u, a->v.str, "arg", index))
		return bad(u, "arg %" PRIu64 "'s text is missing", index);
	if (a->kind != STROBE_ARG_JSON)
		return 0;
	const char *s = u->blob + u->offs[a->v.str];
	char *text = strndup(s, u->offs[a->v.str + 1] - u->offs[a->v.str]);
	bool ok = text && strlen(text) == u->offs[a->v.str + 1] - u->offs[a->v.str] && strb_json_valid(text);
	free(text);
	return ok ? 0 : bad(u, "arg %" PRIu64 " is not valid JSON", index);
}

static int check_all(struct unpacker *u)
{
	const struct strb_pack_header *h = u->h;
	if (check_string(u, h->device_properties, "deviceProperties", 0))
		return -EINVAL;
	uint64_t act_args = h->nargs - h->nmeta;
	for (uint32_t i = 0; i < h->nacts; i++) {
		const struct strb_pack_act *a = &u->acts[i];
		if (!strobe_activity_type_name((enum strobe_activity_type)a->type))
			return bad(u, "activity %" PRIu32 " has type %" PRIu32 ", which is none", i, a->type);
		if (a->flow_kind > STROBE_FLOW_ASYNC_CPU_GPU)
			return bad(u, "activity %" PRIu32 " has flow kind %" PRIu32 ", which is none", i,
			           a->flow_kind);
		if (a->end_ns < a->start_ns)
			return bad(u, "activity %" PRIu32 " ends before it begins", i);
		if (check_string(u, a->name, "activity", i) || check_string(u, a->category, "activity", i))
			return -EINVAL;
		if (a->first_arg > act_args || a->arg_count > act_args - a->first_arg)
			return bad(u, "activity %" PRIu32 "'s args run past the args", i);
	}
	for (uint32_t i = 0; i < h->nargs; i++)
		if (check_arg(u, &u->args[i], i))
			return -EINVAL;
	for (uint32_t i = 0; i < h->nres; i++) {
		const struct strb_pack_res *r = &u->res[i];
		if (r->kind > STROBE_RESOURCE_ROW)
			return bad(u, "row %" PRIu32 " has kind %" PRIu32 ", which is none", i, r->kind);
		if (check_string(u, r->name, "row", i) || check_string(u, r->label, "row", i))
			return -EINVAL;
	}
	return 0;
}

/* String id interned into t (0: NULL; *oom set on failure). */
static const char *string_of(struct unpacker *u, struct strobe_trace *t, uint64_t id, bool *oom)
{
	if (!id)
		return NULL;
	const char *s = strb_trace_intern(t, u->blob + u->offs[id], u->offs[id + 1] - u->offs[id]);
	if (!s)
		*oom = true;
	return s;
}

static void arg_of(struct unpacker *u, struct strobe_trace *t, const struct strb_pack_arg *p,
                   struct strobe_arg *a, bool *oom)
{
	*a = (struct strobe_arg){.key = string_of(u, t, p->key, oom), .kind = (enum strobe_arg_kind)p->kind};
	switch (a->kind) {
	case STROBE_ARG_I64:
		a->value.i64 = p->v.i64;
		break;
	case STROBE_ARG_U64:
		a->value.u64 = p->v.u64;
		break;
	case STROBE_ARG_F64:
		a->value.f64 = p->v.f64;
		break;
	case STROBE_ARG_BOOL:
		a->value.b = p->v.b != 0;
		break;
	default:
		a->value.str = string_of(u, t, p->v.str, oom);
		break;
	}
}

int strb_unpack_trace(struct strobe_trace *t, const void *block, size_t len, int64_t from_ns,
                      uint64_t *out_of_window, char *err, size_t errlen)
{
	struct unpacker u = {.err = err, .errlen = errlen};
	if (errlen)
		err[0] = 0;
	if (((uintptr_t)block & 7) != 0)
		return bad(&u, "it is not 8-byte aligned in memory");
	int rc = layout(&u, block, len);
	if (rc || (rc = check_all(&u)))
		return rc;
	bool oom = false;
	struct strobe_arg args[64], *heap = NULL;
	for (uint32_t i = 0; i < u.h->nacts && !oom; i++) {
		const struct strb_pack_act *p = &u.acts[i];
		if (p->end_ns < from_ns) {
			(*out_of_window)++;
			continue;
		}
		struct strobe_arg *as = args;
		if (p->arg_count > sizeof(args) / sizeof(args[0])) {
			free(heap);
			as = heap = malloc(p->arg_count * sizeof(*heap));
			if (!heap) {
				oom = true;
				break;
			}
		}
		for (uint32_t j = 0; j < p->arg_count; j++)
			arg_of(&u, t, &u.args[p->first_arg + j], &as[j], &oom);
		struct strobe_activity a = {
		    .size = sizeof(a),
		    .type = (enum strobe_activity_type)p->type,
		    .flags = p->flags,
		    .name = string_of(&u, t, p->name, &oom),
		    .start_ns = p->start_ns,
		    .end_ns = p->end_ns,
		    .device = p->device,
		    .resource = p->resource,
		    .id = p->id,
		    .linked_id = p->linked_id,
		    .flow_id = p->flow_id,
		    .flow_kind = (enum strobe_flow_kind)p->flow_kind,
		    .args = as,
		    .arg_count = p->arg_count,
		    .category = string_of(&u, t, p->category, &oom),
		};
		if (!a.name)
			a.name = "";
		if (!oom && strb_trace_add_copy(t, &a))
			oom = true;
	}
	free(heap);
	for (uint32_t i = 0; i < u.h->nres && !oom; i++) {
		const struct strb_pack_res *p = &u.res[i];
		struct strobe_resource r = {
		    .size = sizeof(r),
		    .kind = (enum strobe_resource_kind)p->kind,
		    .device = p->device,
		    .resource = p->resource,
		    .name = string_of(&u, t, p->name, &oom),
		    .label = string_of(&u, t, p->label, &oom),
		    .sort_index = p->sort_index,
		};
		if (!oom && strb_trace_add_resource(t, &r))
			oom = true;
	}
	const struct strb_pack_arg *meta = u.args + (u.h->nargs - u.h->nmeta);
	for (uint32_t i = 0; i < u.h->nmeta && !oom; i++) {
		struct strobe_arg e;
		arg_of(&u, t, &meta[i], &e, &oom);
		bool have = false;
		for (size_t j = 0; j < t->meta_count && !oom; j++)
			have |= !strcmp(t->meta[j].key, e.key);
		if (!oom && !have && strb_trace_set_meta(t, &e))
			oom = true;
	}
	const char *props = string_of(&u, t, u.h->device_properties, &oom);
	if (props && !*t->device_properties)
		t->device_properties = props;
	if (u.h->gpu)
		t->stats.gpu = true;
	for (size_t s = 0; s < STRB_PACK_STATS; s++) {
		uint64_t v;
		memcpy(&v, (char *)&t->stats + stat_at[s], sizeof(v));
		v += u.h->stats[s];
		memcpy((char *)&t->stats + stat_at[s], &v, sizeof(v));
	}
	if (oom)
		return bad(&u, "out of memory");
	return 0;
}
