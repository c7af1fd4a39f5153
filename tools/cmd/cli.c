/* The command line shared by every command: see cli.h. */
#include "cmd/cli.h"
#include "common/monotonic.h"
#include "read/trace_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void vsay(const struct cli *c, const char *fmt, va_list ap)
{
	fprintf(stderr, "strobe: %s: ", c->cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static int usage_line(const struct cli *c)
{
	fprintf(stderr, "usage: %s (see strobe %s --help)\n", c->synopsis, c->cmd);
	return CLI_USAGE;
}

int cli_usage(const struct cli *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(c, fmt, ap);
	va_end(ap);
	return usage_line(c);
}

int cli_error(const struct cli *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(c, fmt, ap);
	va_end(ap);
	return 1;
}

int cli_bad_value(const struct cli *c, const char *opt, const char *value, const char *what)
{
	if (!value)
		return cli_usage(c, "%s needs %s", opt, what);
	return cli_usage(c, "%s: '%s' is not %s", opt, value, what);
}

bool cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static bool opt_is(int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n))
		return false;
	if (a[n] == '=' && name[1] == '-') {
		*value = a + n + 1;
		return true;
	}
	if (a[n])
		return false;
	*value = *i + 1 < argc ? argv[++*i] : NULL;
	return true;
}

bool cli_opt(int argc, char **argv, int *i, const char *name, const char *alias, const char **value)
{
	return opt_is(argc, argv, i, name, value) || (alias && opt_is(argc, argv, i, alias, value));
}

int cli_parse_duration(const char *s, int64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"", 1e9}, {"s", 1e9},  {"ms", 1e6},   {"us", 1e3},  {"\xc2\xb5s", 1e3},
	             {"ns", 1}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
	const char *p = s;
	while (*p >= '0' && *p <= '9')
		p++;
	bool digits = p > s;
	if (*p == '.') {
		const char *f = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		digits = digits || p > f;
	}
	if (!digits)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].unit))
			continue;
		/* The number part is plain decimal, so strtod reads exactly it. */
		double x = strtod(s, NULL) * units[i].ns;
		if (!(x < 0x1p63))
			return -ERANGE;
		*ns = llround(x);
		return 0;
	}
	return -EINVAL;
}

int cli_duration(const struct cli *c, const char *opt, const char *value, int64_t *ns)
{
	int rc = value ? cli_parse_duration(value, ns) : -EINVAL;
	if (rc == -ERANGE)
		return cli_usage(c, "%s: '%s' is longer than the longest duration (292 years)", opt, value);
	return rc ? cli_bad_value(c, opt, value, "a duration (" CLI_DURATION_HELP ")") : 0;
}

int cli_int(const struct cli *c, const char *opt, const char *value, int64_t min, int64_t max, int64_t *out)
{
	if (value &&
	    ((*value >= '0' && *value <= '9') || (*value == '-' && value[1] >= '0' && value[1] <= '9'))) {
		char *end;
		errno = 0;
		long long v = strtoll(value, &end, 10);
		if (!*end && !errno && v >= min && v <= max) {
			*out = v;
			return 0;
		}
	}
	char what[96];
	snprintf(what, sizeof(what), "a whole number from %" PRId64 " to %" PRId64, min, max);
	return cli_bad_value(c, opt, value, what);
}

int cli_text(const struct cli *c, const char *opt, const char *value, const char *what, const char **out)
{
	if (!value || !*value)
		return cli_usage(c, "%s needs %s", opt, what);
	*out = value;
	return 0;
}

int cli_file_arg(const struct cli *c, int argc, char **argv, int *i, const char **file)
{
	const char *a = argv[*i];
	if (!strcmp(a, "--")) {
		if (*i + 2 != argc || *file)
			return cli_usage(c, "%s",
			                 *i + 1 < argc ? "give one trace file" : "no trace file given");
		*file = argv[++*i];
		return 0;
	}
	if (a[0] == '-' && a[1])
		return cli_usage(c, "unknown option '%s'", a);
	if (*file)
		return cli_usage(c, "one trace file at a time ('%s' is a second)", a);
	*file = a;
	return 0;
}

int cli_top_or_file(const struct cli *c, int argc, char **argv, int *i, size_t *top, const char **file)
{
	const char *v;
	if (!cli_opt(argc, argv, i, "--top", NULL, &v))
		return cli_file_arg(c, argc, argv, i, file);
	int64_t n = 0;
	int rc = cli_int(c, "--top", v, 0, 1000000, &n);
	if (!rc)
		*top = (size_t)n;
	return rc;
}

char *cli_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
	bool use_stdin = !strcmp(path, "-");
	const char *name = use_stdin ? "<stdin>" : path;
	FILE *f = use_stdin ? stdin : fopen(path, "rbe");
	if (!f) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int why = buf ? 0 : ENOMEM;
	while (!why) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap) {
			why = ferror(f) ? EIO : 0;
			break;
		}
		if (cap > max) {
			why = EFBIG;
			break;
		}
		char *bigger = realloc(buf, cap * 2 + 1);
		if (!bigger) {
			why = ENOMEM;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	if (!why && n > max)
		why = EFBIG;
	if (!use_stdin)
		fclose(f);
	if (why) {
		if (why == EFBIG)
			snprintf(err, errlen, "%s: larger than %zu bytes", name, max);
		else
			snprintf(err, errlen, "%s: %s", name, strerror(why));
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* ---- progress ---------------------------------------------------------------- */

bool cli_progress_start(struct cli_progress *p, const char *cmd, const char *file, bool quiet, bool asked)
{
	*p = (struct cli_progress){.cmd = cmd};
	struct stat fs;
	if (strcmp(file, "-") && !stat(file, &fs) && S_ISREG(fs.st_mode))
		p->total = (uint64_t)fs.st_size;
	return !quiet && (asked || isatty(STDERR_FILENO));
}

void cli_progress_cb(const char *pass, const struct tr_stats *st, void *arg)
{
	struct cli_progress *p = arg;
	int64_t t = strb_mono_ns_raw();
	bool reading = !strcmp(pass, "reading");
	if (reading && t - p->last_ns < 250000000)
		return;
	p->last_ns = t;
	p->shown = true;
	double mb = (double)st->file_bytes / 1e6, mev = (double)st->events / 1e6;
	/* A file the fast tokenizer gave up on is read again from its start. */
	const char *what = st->reread ? "reading again" : "reading";
	if (reading && p->total)
		fprintf(stderr, "\rstrobe: %s: %s %.1f / %.1f MB (%.0f%%), %.2f M events ", p->cmd, what, mb,
		        (double)p->total / 1e6, 100.0 * (double)st->file_bytes / (double)p->total, mev);
	else if (reading)
		fprintf(stderr, "\rstrobe: %s: %s %.1f MB, %.2f M events ", p->cmd, what, mb, mev);
	else
		fprintf(stderr, "\rstrobe: %s: read %.1f MB, %.2f M events; %s...           ", p->cmd, mb,
		        mev, pass);
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->shown)
		fputc('\n', stderr);
	p->shown = false;
}
