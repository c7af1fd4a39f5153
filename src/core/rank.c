/* Rank identity: what strobe_set_rank set, else the first launcher whose
 * rank variable is set, as libkineto-shaped "distributedInfo". */
#define LOG_TAG "rank"
#include "core/rank.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "common/error.h"
#include "common/log.h"

/* -1 = unknown. Three separate words: a set racing a trace's processing may
 * be seen half-applied by that one trace, never torn within a value. */
static _Atomic int64_t api_rank = -1, api_local = -1, api_world = -1;

int strobe_set_rank(int64_t rank, int64_t local_rank, int64_t world_size)
{
	if (rank < -1 || local_rank < -1 || world_size < -1 || world_size == 0)
		return strb_error(-EINVAL,
		                  "strobe_set_rank: values must be -1 (unknown) or >= 0 (world size >= 1)");
	if (world_size > 0 && rank >= world_size)
		return strb_error(-EINVAL, "strobe_set_rank: rank %lld is not below world size %lld",
		                  (long long)rank, (long long)world_size);
	atomic_store_explicit(&api_rank, rank, memory_order_relaxed);
	atomic_store_explicit(&api_local, local_rank, memory_order_relaxed);
	atomic_store_explicit(&api_world, world_size, memory_order_relaxed);
	return 0;
}

/* Launchers in the order they are believed: torchrun sets RANK even when it
 * runs under Slurm or MPI, and its RANK is the one the program uses. The
 * three values of one trace come from one launcher. */
static const struct launcher {
	const char *rank, *local, *world;
} launchers[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE"},
    {"PMIX_RANK", NULL, NULL},
};

/* The variable's value as a non-negative integer; -1 when unset, and -1
 * with a warning when set to anything else. */
static int64_t env_int(const char *name)
{
	const char *v = name ? getenv(name) : NULL;
	if (!v)
		return -1;
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	/* Digits only: strtoll would take " 3", "+3" and "-3". */
	if (*v < '0' || *v > '9' || *end || errno) {
		LOGW("ignoring %s=\"%s\": not a non-negative integer", name, v);
		return -1;
	}
	return n;
}

struct identity {
	int64_t rank, local, world;
	const char *source; /* variable the rank came from, "api", or NULL */
};

static void identify(struct identity *id)
{
	*id = (struct identity){-1, -1, -1, NULL};
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		int64_t r = env_int(launchers[i].rank);
		if (r < 0)
			continue;
		id->rank = r;
		id->local = env_int(launchers[i].local);
		id->world = env_int(launchers[i].world);
		id->source = launchers[i].rank;
		break;
	}
	/* What the program said beats the launcher, value by value. */
	int64_t r = atomic_load_explicit(&api_rank, memory_order_relaxed);
	int64_t l = atomic_load_explicit(&api_local, memory_order_relaxed);
	int64_t w = atomic_load_explicit(&api_world, memory_order_relaxed);
	if (r >= 0) {
		id->rank = r;
		id->source = "api";
	}
	if (l >= 0)
		id->local = l;
	if (w >= 0)
		id->world = w;
}

static void gen_key(yajl_gen g, const char *k)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

/* A string member; skipped (with a warning) when it is not UTF-8. */
static void gen_str_member(yajl_gen g, const char *k, const char *v)
{
	if (!v)
		return;
	/* Checked before the key goes out, so a bad value leaves no dangling key. */
	yajl_gen probe = yajl_gen_alloc(NULL);
	bool ok = probe && yajl_gen_config(probe, yajl_gen_validate_utf8, 1) &&
	          yajl_gen_string(probe, (const unsigned char *)v, strlen(v)) == yajl_gen_status_ok;
	if (probe)
		yajl_gen_free(probe);
	if (!ok) {
		LOGW("distributedInfo: %s is not valid UTF-8; left out", k);
		return;
	}
	gen_key(g, k);
	yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

static void gen_int_member(yajl_gen g, const char *k, int64_t v)
{
	if (v < 0)
		return;
	gen_key(g, k);
	yajl_gen_integer(g, v);
}

/* "gpu_uuids": the "uuid" of every device object, in deviceProperties order. */
static void gen_uuids(yajl_gen g, const char *device_properties)
{
	if (!device_properties || !*device_properties)
		return;
	size_t n = strlen(device_properties);
	char *text = malloc(n + 3);
	if (!text)
		return;
	text[0] = '[';
	memcpy(text + 1, device_properties, n);
	memcpy(text + 1 + n, "]", 2);
	char err[128];
	yajl_val props = yajl_tree_parse(text, err, sizeof(err));
	free(text);
	if (!props || !YAJL_IS_ARRAY(props)) {
		LOGW("distributedInfo: deviceProperties do not parse (%s); no gpu_uuids",
		     props ? "not a list" : err);
		yajl_tree_free(props);
		return;
	}
	const char *path[] = {"uuid", NULL};
	bool open = false;
	for (size_t i = 0; i < props->u.array.len; i++) {
		yajl_val u = yajl_tree_get(props->u.array.values[i], path, yajl_t_string);
		const char *s = YAJL_GET_STRING(u);
		if (!s)
			continue;
		if (!open) {
			gen_key(g, "gpu_uuids");
			yajl_gen_array_open(g);
			open = true;
		}
		yajl_gen_string(g, (const unsigned char *)s, strlen(s));
	}
	if (open)
		yajl_gen_array_close(g);
	yajl_tree_free(props);
}

char *strb_rank_json(const char *host, const char *device_properties)
{
	struct identity id;
	identify(&id);
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return NULL;
	yajl_gen_map_open(g);
	gen_int_member(g, "rank", id.rank);
	gen_int_member(g, "local_rank", id.local);
	gen_int_member(g, "world_size", id.world);
	gen_str_member(g, "rank_source", id.source);
	gen_str_member(g, "host", host);
	gen_str_member(g, "cuda_visible_devices", getenv("CUDA_VISIBLE_DEVICES"));
	gen_uuids(g, device_properties);
	yajl_gen_map_close(g);
	const unsigned char *buf;
	size_t len;
	char *out = NULL;
	if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
		out = malloc(len + 1);
		if (out) {
			memcpy(out, buf, len);
			out[len] = 0;
		}
	}
	yajl_gen_free(g);
	return out;
}
