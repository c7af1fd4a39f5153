#include "testutil.h"

#include "strobe/strobe.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	fclose(f);
	if (!buf)
		return NULL;
	buf[n] = 0;
	*len = n;
	return buf;
}

static char *gunzip(const char *in, size_t in_len, size_t *out_len)
{
	z_stream zs = {0};
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return NULL;
	size_t cap = in_len * 4 + 1024, n = 0;
	char *out = malloc(cap + 1);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)in_len;
	int rc;
	do {
		if (n == cap) {
			cap *= 2;
			out = realloc(out, cap + 1);
		}
		zs.next_out = (Bytef *)out + n;
		zs.avail_out = (uInt)(cap - n);
		rc = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
	} while (rc == Z_OK);
	inflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	out[n] = 0;
	*out_len = n;
	return out;
}

static char *unzstd(const char *in, size_t in_len, size_t *out_len)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	size_t cap = in_len * 8 + 1024, n = 0;
	char *out = malloc(cap + 1);
	ZSTD_inBuffer ib = {in, in_len, 0};
	size_t rc = 1;
	while (ib.pos < ib.size || rc != 0) {
		if (n == cap) {
			cap *= 2;
			out = realloc(out, cap + 1);
		}
		ZSTD_outBuffer ob = {out + n, cap - n, 0};
		rc = ZSTD_decompressStream(ds, &ob, &ib);
		n += ob.pos;
		if (ZSTD_isError(rc) || (ob.pos == 0 && ib.pos == ib.size && rc != 0 && n < cap)) {
			ZSTD_freeDStream(ds);
			free(out);
			return NULL;
		}
	}
	ZSTD_freeDStream(ds);
	out[n] = 0;
	*out_len = n;
	return out;
}

char *tu_read_file(const char *path, size_t *len)
{
	size_t n = 0, dummy;
	char *raw = slurp(path, &n);
	if (!raw)
		return NULL;
	char *text = raw;
	if (n >= 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b) {
		text = gunzip(raw, n, &n);
		free(raw);
	} else if (n >= 4 && !memcmp(raw, "\x28\xb5\x2f\xfd", 4)) {
		text = unzstd(raw, n, &n);
		free(raw);
	}
	if (text)
		*(len ? len : &dummy) = n;
	return text;
}

int tu_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = strlen(text);
	int ok = fwrite(text, 1, n, f) == n;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

char *tu_mkdtemp(void)
{
	static __thread char buf[4096];
	const char *base = getenv("TMPDIR");
	snprintf(buf, sizeof(buf), "%s/strobe-test-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(buf))
		fail_msg("mkdtemp: %s", strerror(errno));
	return buf;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void tu_rmrf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char tu_dir[1024];

int tu_strobe_group_setup(void **state)
{
	(void)state;
	if (strobe_init(NULL))
		return -1;
	const char *dir = tu_mkdtemp();
	size_t len = strlen(dir);
	if (len >= sizeof(tu_dir))
		return -1;
	memcpy(tu_dir, dir, len + 1);
	return 0;
}

int tu_strobe_group_teardown(void **state)
{
	(void)state;
	tu_rmrf(tu_dir);
	strobe_shutdown();
	return 0;
}

int tu_flight_off(void **state)
{
	(void)state;
	(void)strobe_flight_stop(); /* STROBE_E_STATE when the test stopped it */
	return 0;
}

yajl_val tu_flight_newest(uint64_t window_ns, const char *op, uint64_t *op_id, yajl_val (*record)(void *arg),
                          bool (*found)(yajl_val root, void *arg), void *arg)
{
	for (int attempt = 1;; attempt++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (op && attempt > 1)
			strobe_op_pop();
		if (op)
			*op_id = strobe_op_push(op);
		yajl_val root = record(arg);
		clock_gettime(CLOCK_MONOTONIC, &b);
		uint64_t took =
		    (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
		if (root && found(root, arg))
			return root;
		fprintf(
		    stderr,
		    "attempt %d: the newest work is not in its dump; work and dump took %.1f ms, the window "
		    "is %.1f ms\n",
		    attempt, (double)took / 1e6, (double)window_ns / 1e6);
		if (took < window_ns || attempt == 5)
			return root;
		yajl_tree_free(root);
	}
}

void tu_record_at(const char *name, int type, int64_t start, int64_t dur, struct strobe_activity extra)
{
	extra.size = sizeof(extra);
	extra.type = (enum strobe_activity_type)type;
	extra.name = name;
	extra.start_ns = start;
	extra.end_ns = start + dur;
	int rc = strobe_record(&extra);
	if (rc)
		fail_msg("strobe_record(%s): %s: %s", name, strobe_status_string(rc), strobe_last_error());
}

void tu_assert_contains(const char *text, const char *needle)
{
	if (!text || !strstr(text, needle))
		fail_msg("\"%s\" is not in:\n%.6000s", needle, text ? text : "(null)");
}

char *tu_line_with(const char *text, const char *needle)
{
	const char *at = strstr(text, needle);
	if (!at)
		fail_msg("\"%s\" is not in the output:\n%s", needle, text);
	const char *start = at, *end = strchr(at, '\n');
	while (start > text && start[-1] != '\n')
		start--;
	return strndup(start, (size_t)((end ? end : at + strlen(at)) - start));
}

void tu_assert_line(const char *text, const char *needle, const char *want)
{
	char *line = tu_line_with(text, needle);
	tu_assert_contains(line, want);
	free(line);
}

int tu_run(const char *cmd, int merge_stderr, char **out)
{
	char *full = malloc(strlen(cmd) + 16);
	sprintf(full, merge_stderr ? "(%s) 2>&1" : "%s", cmd);
	FILE *p = popen(full, "r");
	free(full);
	if (!p)
		return -1;
	size_t cap = 4096, n = 0, got;
	char *buf = malloc(cap + 1);
	while ((got = fread(buf + n, 1, cap - n, p)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	buf[n] = 0;
	int st = pclose(p);
	if (out)
		*out = buf;
	else
		free(buf);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

int tu_strobe(const char *command, const char *args, int merge_stderr, char **out)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "'%s' %s %s", STROBE_CLI_PATH, command, args);
	return tu_run(cmd, merge_stderr, out);
}

yajl_val tu_parse_json(const char *text)
{
	char err[256];
	return yajl_tree_parse(text, err, sizeof(err));
}

yajl_val tu_load_trace(const char *path)
{
	char *text = tu_read_file(path, NULL);
	if (!text)
		fail_msg("cannot read trace %s", path);
	char err[512];
	yajl_val v = yajl_tree_parse(text, err, sizeof(err));
	if (!v)
		fail_msg("%s is not valid JSON: %s", path, err);
	free(text);
	return v;
}

yajl_val tu_get(yajl_val obj, const char *key)
{
	if (!obj || !YAJL_IS_OBJECT(obj))
		return NULL;
	for (size_t i = 0; i < obj->u.object.len; i++)
		if (!strcmp(obj->u.object.keys[i], key))
			return obj->u.object.values[i];
	return NULL;
}

const char *tu_get_str(yajl_val obj, const char *key)
{
	yajl_val v = tu_get(obj, key);
	return v && YAJL_IS_STRING(v) ? v->u.string : NULL;
}

double tu_get_num(yajl_val obj, const char *key)
{
	yajl_val v = tu_get(obj, key);
	if (!v || !YAJL_IS_NUMBER(v))
		fail_msg("member \"%s\" is missing or not a number", key);
	return YAJL_IS_INTEGER(v) ? (double)YAJL_GET_INTEGER(v) : YAJL_GET_DOUBLE(v);
}

yajl_val tu_events(yajl_val root)
{
	yajl_val ev = tu_get(root, "traceEvents");
	if (!ev || !YAJL_IS_ARRAY(ev))
		fail_msg("trace has no traceEvents array");
	return ev;
}

static int matches(yajl_val e, const char *ph, const char *cat, const char *name)
{
	const char *v;
	if (ph && (!(v = tu_get_str(e, "ph")) || strcmp(v, ph)))
		return 0;
	if (cat && (!(v = tu_get_str(e, "cat")) || strcmp(v, cat)))
		return 0;
	if (name && (!(v = tu_get_str(e, "name")) || strcmp(v, name)))
		return 0;
	return 1;
}

size_t tu_count(yajl_val root, const char *ph, const char *cat, const char *name)
{
	yajl_val ev = tu_events(root);
	size_t n = 0;
	for (size_t i = 0; i < ev->u.array.len; i++)
		n += matches(ev->u.array.values[i], ph, cat, name);
	return n;
}

yajl_val tu_find(yajl_val root, const char *ph, const char *cat, const char *name)
{
	yajl_val ev = tu_events(root);
	for (size_t i = 0; i < ev->u.array.len; i++)
		if (matches(ev->u.array.values[i], ph, cat, name))
			return ev->u.array.values[i];
	return NULL;
}

int64_t tu_get_ns(yajl_val obj, const char *key)
{
	yajl_val v = tu_get(obj, key);
	if (!v || !YAJL_IS_NUMBER(v))
		fail_msg("member \"%s\" is missing or not a number", key);
	const char *r = YAJL_GET_NUMBER(v), *p = r;
	int64_t us = 0;
	if (*p == '-')
		p++;
	const char *digits = p;
	while (*p >= '0' && *p <= '9')
		us = us * 10 + (*p++ - '0');
	if (p == digits || p[0] != '.' || !(p[1] >= '0' && p[1] <= '9') || !(p[2] >= '0' && p[2] <= '9') ||
	    !(p[3] >= '0' && p[3] <= '9') || p[4])
		fail_msg("member \"%s\" is %s, not microseconds with three decimals", key, r);
	int64_t ns = us * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
	return r[0] == '-' ? -ns : ns;
}
