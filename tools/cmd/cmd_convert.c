/* strobe convert: a Chrome-trace JSON file (strobe's, libkineto's, any
 * Chrome trace) or a Perfetto trace into Chrome JSON (plain, gzip, zstd) or
 * Perfetto protobuf, as a stream: events go straight from the reader to the
 * writer (tools/write/), so memory stays bounded whatever the input's size.
 * This file parses the arguments, filters and drives the passes. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "common/jbuf.h"
#include "common/monotonic.h"
#include "common/pfenc.h"
#include "common/sink.h"
#include "read/trace_reader.h"
#include "strobe/strobe.h"
#include "write/chrome_json.h"
#include "write/perfetto_out.h"

static const char usage_text[] =
    "usage: strobe convert [options] IN OUT\n"
    "       strobe convert [options] RUN.crash-PID.raw [OUT]\n"
    "\n"
    "Converts a Chrome-trace JSON file written by strobe, libkineto (PyTorch's profiler) or\n"
    "any Chrome-trace writer, or a Perfetto trace. IN is plain, gzip or zstd JSON, or\n"
    "Perfetto protobuf (told apart by content), or \"-\" for stdin; libkineto's known\n"
    "defects (unescaped quotes inside args strings, nan/inf counter values) are repaired.\n"
    "OUT's suffix picks the format:\n"
    "  .json .json.gz .json.zst     Chrome-trace JSON (gzip level 1, zstd level 3)\n"
    "  .pftrace .perfetto-trace     Perfetto protobuf (ui.perfetto.dev, trace_processor)\n"
    "The file is read as a stream, and memory stays bounded whatever its size; to Perfetto it\n"
    "is read twice (first the row names, so that each track is described once), and a pipe on\n"
    "stdin is saved to a temporary file for that. OUT is written under a temporary name and\n"
    "renamed when complete: a failure leaves nothing.\n"
    "\n"
    "IN may also be the raw dump the flight recorder writes when the program dies of a fatal\n"
    "signal (STEM.crash-PID.raw beside its output; docs/flight.md): it becomes a normal trace\n"
    "of the last window, with the ranges open at the signal and the signal in its metadata.\n"
    "OUT is then optional: STEM.crash-PID.json.gz beside IN.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT       the output file (instead of the second file argument)\n"
    "  --min-dur DUR          drop complete (\"X\") events shorter than DUR, with the flow\n"
    "                         arrows bound to them; DUR is a number with a unit: ns, us, ms,\n"
    "                         s, m or h (a bare number is seconds, as for every strobe option)\n"
    "  --categories A,B,...   keep only events whose \"cat\" is one of these (events without\n"
    "                         a cat, like process and thread names, are always kept; flows\n"
    "                         follow the event they are bound to)\n"
    "  --progress             show progress on stderr even when it is not a terminal\n"
    "  -q, --quiet            print nothing but errors\n"
    "  -h, --help             show this text\n"
    "\n"
    "Unless --quiet, progress (bytes read of the total) is shown on stderr when it is a\n"
    "terminal, and one line at the end says what was written.\n"
    "\n"
    "exit status: 0 done, 1 IN cannot be read or is not a trace, or OUT cannot be written,\n"
    "2 usage error (including an OUT suffix of no known format).\n"
    "\n"
    "examples:\n"
    "  strobe convert trace.json trace.pftrace\n"
    "  strobe convert --min-dur 10us libkineto_trace.json.gz small.json.zst\n"
    "  strobe convert --categories kernel,cuda_runtime,cpu_op trace.json gpu.pftrace\n"
    "  zcat huge.json.gz | strobe convert - huge.perfetto-trace\n"
    "  strobe convert run.crash-4242.raw\n";

static const struct cli cli = {"convert", "strobe convert [options] IN OUT"};

struct opts {
	const char *in, *out;
	int64_t min_dur;
	bool has_min_dur;
	char **cats;
	size_t ncats;
	char *cat_text[8]; /* the --categories values the names point into */
	size_t ncat_text;
	bool quiet, progress;
	char *default_out; /* OUT named after a raw dump */
	char *crash_json;  /* a raw dump converted before filtering: removed at the end */
};

struct conv {
	const struct opts *o;
	struct cj_writer cj;          /* JSON out */
	struct pfo *pf;               /* Perfetto out */
	FILE *in;                     /* IN when read from a stream twice, else NULL */
	struct tr_stats st, names_st; /* of the pass that writes, and of the naming pass */
	const struct tr_stats *cur;   /* the pass being read */
	const char *pass;             /* its label in progress lines */
	uint64_t in_total;            /* bytes of IN, 0 when unknown */
	bool show_progress;
	int64_t last_progress_ns;

	/* the last "X" seen, for binding flow events that follow it */
	bool last_x;
	bool last_x_kept;
	uint64_t last_row;
	int64_t last_ts, last_end;

	uint64_t filtered;
};

static void progress(struct conv *c, bool final)
{
	if (!c->show_progress || !c->cur)
		return;
	int64_t t = strb_mono_ns_raw();
	if (!final && t - c->last_progress_ns < 250000000)
		return;
	c->last_progress_ns = t;
	const struct tr_stats *st = c->cur;
	double mb = (double)st->file_bytes / 1e6;
	/* A file the fast tokenizer gave up on is read again from its start. */
	const char *again = st->reread ? "again: " : "";
	if (c->in_total)
		fprintf(stderr, "\rstrobe: convert: %s%s%.1f / %.1f MB read (%.0f%%), %llu events ", c->pass,
		        again, mb, (double)c->in_total / 1e6,
		        100.0 * (double)st->file_bytes / (double)c->in_total, (unsigned long long)st->events);
	else
		fprintf(stderr, "\rstrobe: convert: %s%s%.1f MB read, %llu events ", c->pass, again, mb,
		        (unsigned long long)st->events);
	if (final)
		fputc('\n', stderr);
}

/* ---- the stream ---------------------------------------------------------------- */

static bool category_kept(const struct conv *c, const char *cat)
{
	if (!c->o->ncats || !cat[0])
		return true;
	for (size_t i = 0; i < c->o->ncats; i++)
		if (!strcmp(c->o->cats[i], cat))
			return true;
	return false;
}

static bool is_flow(const char *ph)
{
	return (ph[0] == 's' || ph[0] == 'f' || ph[0] == 't') && !ph[1];
}

static uint64_t ident_hash(const struct tr_ident *id)
{
	return strb_pfmap_key((uint64_t)id->kind, strb_pfmap_str(id->text));
}

static int on_event(const struct tr_event *ev, void *arg)
{
	struct conv *c = arg;
	if ((c->st.events & 1023) == 0)
		progress(c, false);
	uint64_t row = strb_pfmap_key(ident_hash(&ev->pid), ident_hash(&ev->tid));
	bool keep, bound = false;
	if (is_flow(ev->ph)) {
		/* A flow event binds to the complete event just before it on its row
		 * (libkineto and strobe write it right after), and shares its fate. */
		bound = c->last_x && c->last_row == row && ev->has_ts && ev->ts_ns >= c->last_ts &&
		        ev->ts_ns <= c->last_end;
		keep = bound ? c->last_x_kept : category_kept(c, ev->cat);
	} else {
		keep = category_kept(c, ev->cat);
		bool x = !strcmp(ev->ph, "X");
		if (x && c->o->has_min_dur && (!ev->has_dur || ev->dur_ns < c->o->min_dur))
			keep = false;
		c->last_x = x;
		if (x) {
			c->last_x_kept = keep;
			c->last_row = row;
			c->last_ts = ev->ts_ns;
			int64_t dur = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
			if (__builtin_add_overflow(ev->ts_ns, dur, &c->last_end))
				c->last_end = INT64_MAX;
		}
	}
	if (!keep) {
		c->filtered++;
		return 0;
	}
	if (c->pf)
		return pfo_event(c->pf, ev, bound);
	cj_event(&c->cj, ev, NULL);
	return c->cj.b->err;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct conv *c = arg;
	progress(c, false);
	cj_member(&c->cj, key, json, len, truncated);
	return c->cj.b->err;
}

/* The naming pass of a Perfetto output. */
static int learn_event(const struct tr_event *ev, void *arg)
{
	struct conv *c = arg;
	if ((c->names_st.events & 1023) == 0)
		progress(c, false);
	return pfo_learn_event(c->pf, ev);
}

static int learn_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct conv *c = arg;
	return pfo_learn_member(c->pf, key, json, len, truncated);
}

/* A pipe on stdin, saved to an unlinked temporary file so that it can be
 * read twice; stdin itself when it is a file. NULL with err set on failure. */
static FILE *rereadable_stdin(char *err, size_t errlen)
{
	struct stat sb;
	if (fstat(STDIN_FILENO, &sb) == 0 && S_ISREG(sb.st_mode) && lseek(STDIN_FILENO, 0, SEEK_CUR) == 0)
		return stdin;
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/strobe-convert-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w+b");
	if (fd >= 0)
		unlink(path);
	if (!f) {
		snprintf(err, errlen, "cannot save stdin to read it twice: %.300s: %s", path,
		         strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) {
		if (fwrite(buf, 1, n, f) != n) {
			snprintf(err, errlen, "cannot save stdin to read it twice: %s", strerror(errno));
			fclose(f);
			return NULL;
		}
	}
	if (ferror(stdin)) {
		snprintf(err, errlen, "<stdin>: %s", strerror(errno));
		fclose(f);
		return NULL;
	}
	return f;
}

static int read_pass(struct conv *c, tr_event_cb ev, tr_member_cb member, struct tr_stats *st,
                     const char *pass, char *err, size_t errlen)
{
	memset(st, 0, sizeof(*st));
	c->cur = st;
	c->pass = pass;
	c->last_x = false;
	struct tr_handler h = {.event_cb = ev, .member_cb = member, .user_arg = c};
	int rc;
	if (c->in) {
		rewind(c->in);
		rc = tr_read_stream(c->in, "<stdin>", &h, st, err, errlen);
	} else {
		rc = tr_read_file(c->o->in, &h, st, err, errlen);
	}
	progress(c, true);
	return rc;
}

/* ---- the command -------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int add_categories(struct opts *o, const char *v)
{
	if (o->ncat_text == sizeof(o->cat_text) / sizeof(o->cat_text[0]))
		return cli_usage(&cli, "give --categories at most 8 times");
	char *copy = strdup(v);
	if (!copy)
		return cli_error(&cli, "out of memory");
	o->cat_text[o->ncat_text++] = copy;
	size_t before = o->ncats;
	for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **n = realloc(o->cats, (o->ncats + 1) * sizeof(*n));
		if (!n)
			return cli_error(&cli, "out of memory");
		o->cats = n;
		o->cats[o->ncats++] = t;
	}
	if (o->ncats == before)
		return cli_bad_value(&cli, "--categories", v, "a comma-separated list of categories");
	return 0;
}

/* 0 to go on; else the exit status (a usage error, or 0 after --help). */
static int parse_args(int argc, char **argv, struct opts *o, bool *done)
{
	const char *files[2];
	int nfiles = 0, rc;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (cli_is_help(a)) {
			fputs(usage_text, stdout);
			*done = true;
			return 0;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--progress")) {
			o->progress = true;
		} else if (cli_opt(argc, argv, &i, "--min-dur", NULL, &v)) {
			if ((rc = cli_duration(&cli, "--min-dur", v, &o->min_dur)))
				return rc;
			o->has_min_dur = true;
		} else if (cli_opt(argc, argv, &i, "--categories", NULL, &v)) {
			if ((rc = cli_text(&cli, "--categories", v, "a comma-separated list of categories",
			                   &v)) ||
			    (rc = add_categories(o, v)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--output", "-o", &v)) {
			if (o->out)
				return cli_usage(&cli, "give -o/--output once");
			o->out = v;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage(&cli, "unknown option '%s'", a);
		} else if (nfiles == 2 || (nfiles == 1 && o->out)) {
			return cli_usage(&cli, "one input and one output ('%s' is a third file)", a);
		} else {
			files[nfiles++] = a;
		}
	}
	if (!nfiles)
		return cli_usage(&cli, "no input or output file given");
	if (nfiles == 2 && o->out)
		return cli_usage(&cli, "one input and one output ('%s' is a third file)", files[1]);
	o->in = files[0];
	if (nfiles == 2)
		o->out = files[1];
	return 0;
}

static void report(const struct conv *c)
{
	if (c->o->quiet)
		return;
	uint64_t written = c->cj.events, left_out = c->filtered, members_dropped = 0;
	const struct pfo_stats *ps = c->pf ? pfo_stats(c->pf) : NULL;
	if (ps) {
		written = ps->written;
		left_out += ps->left_out;
		members_dropped = ps->members_dropped;
	}
	fprintf(stderr, "strobe: wrote %s: %llu of %llu events", c->o->out, (unsigned long long)written,
	        (unsigned long long)c->st.events);
	if (left_out)
		fprintf(stderr, " (%llu left out)", (unsigned long long)left_out);
	if (ps)
		fprintf(stderr, ", %llu flows on their slices, %llu on instants of their own",
		        (unsigned long long)ps->flows_bound, (unsigned long long)ps->flows_unbound);
	fputc('\n', stderr);
	uint64_t cut = c->st.truncated, dropped = c->st.dropped + members_dropped;
	if (cut || dropped)
		fprintf(stderr,
		        "strobe: %s: %llu strings or values were cut at the reader's limits and %llu args or "
		        "members were dropped (docs/output-format.md)\n",
		        c->o->in, (unsigned long long)cut, (unsigned long long)dropped);
	if (c->st.repaired)
		fprintf(stderr,
		        "strobe: %s: repaired %llu libkineto defects (unescaped quotes, nan/inf numbers)\n",
		        c->o->in, (unsigned long long)c->st.repaired);
}

/* IN is a raw crash dump: its magic, as libstrobe's reader checks it. */
static bool is_crash_dump(const char *path)
{
	char magic[8];
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : NULL;
	bool yes = f && fread(magic, 1, sizeof(magic), f) == sizeof(magic) && !memcmp(magic, "STRBCRSH", 8);
	if (f)
		fclose(f);
	return yes;
}

/* A raw crash dump becomes a trace at OUT, or, when events are filtered,
 * a temporary JSON file that is then converted as any trace is. 0 to go
 * on, else the exit status. */
static int from_crash_dump(struct opts *o, bool *done)
{
	if (!o->out) {
		size_t n = strlen(o->in);
		if (n > 4 && !strcmp(o->in + n - 4, ".raw"))
			n -= 4;
		if (!(o->default_out = malloc(n + sizeof(".json.gz"))))
			return cli_error(&cli, "out of memory");
		memcpy(o->default_out, o->in, n);
		strcpy(o->default_out + n, ".json.gz");
		o->out = o->default_out;
	}
	bool filtered = o->has_min_dur || o->ncats;
	const char *to = o->out;
	if (filtered) {
		const char *dir = getenv("TMPDIR");
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s/strobe-crash-XXXXXX", dir && *dir ? dir : "/tmp");
		int fd = mkstemp(tmp);
		if (fd < 0)
			return cli_error(&cli, "cannot create a temporary file %.300s: %s", tmp,
			                 strerror(errno));
		close(fd);
		unlink(tmp);
		if (!(o->crash_json = malloc(strlen(tmp) + sizeof(".json"))))
			return cli_error(&cli, "out of memory");
		sprintf(o->crash_json, "%s.json", tmp);
		to = o->crash_json;
	}
	char err[1024] = "";
	if (strobe_internal_flight_convert(o->in, to, err, sizeof(err)))
		return cli_error(&cli, "%s", *err ? err : "cannot convert the crash dump");
	if (filtered) {
		o->in = o->crash_json;
		return 0;
	}
	if (!o->quiet)
		fprintf(stderr, "strobe: wrote %s from the crash dump %s\n", o->out, o->in);
	*done = true;
	return 0;
}

static int convert(struct conv *c)
{
	const struct opts *o = c->o;
	if (!o->out)
		return cli_usage(&cli, "no output file given");
	bool perfetto = strb_output_is_perfetto_path(o->out);
	if (!perfetto && !ends_with(o->out, ".json") && !ends_with(o->out, ".json.gz") &&
	    !ends_with(o->out, ".json.zst"))
		return cli_usage(&cli,
		                 "%s: unknown output format; name it .json, .json.gz, .json.zst, .pftrace or "
		                 ".perfetto-trace",
		                 o->out);
	char err[512] = "";
	if (perfetto && !strcmp(o->in, "-") && !(c->in = rereadable_stdin(err, sizeof(err))))
		return cli_error(&cli, "%s", err);
	struct stat sb;
	if (c->in ? fstat(fileno(c->in), &sb) == 0 : strcmp(o->in, "-") && stat(o->in, &sb) == 0)
		c->in_total = S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
	c->show_progress = !o->quiet && (o->progress || isatty(STDERR_FILENO));

	int rc = perfetto ? pfo_open(&c->pf, o->out) : cj_open(&c->cj, o->out);
	if (rc)
		return cli_error(&cli, "%s", strobe_last_error());
	if (perfetto) {
		rc = read_pass(c, learn_event, learn_member, &c->names_st, "row names: ", err, sizeof(err));
		if (!rc)
			rc = read_pass(c, on_event, NULL, &c->st, "events: ", err, sizeof(err));
		if (!rc)
			rc = pfo_finish(c->pf);
	} else {
		rc = read_pass(c, on_event, on_member, &c->st, "", err, sizeof(err));
		rc = rc ? (cj_abort(&c->cj), rc) : cj_finish(&c->cj);
	}
	if (rc)
		return *err ? cli_error(&cli, "%s", err)
		            : cli_error(&cli, "%s: %s", o->out, strobe_last_error());
	report(c);
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	struct opts o = {0};
	bool done = false;
	int rc = parse_args(argc, argv, &o, &done);
	if (!rc && !done && is_crash_dump(o.in)) {
		bool known = !o.out || strb_output_is_perfetto_path(o.out) || ends_with(o.out, ".json") ||
		             ends_with(o.out, ".json.gz") || ends_with(o.out, ".json.zst");
		rc =
		    known
		        ? from_crash_dump(&o, &done)
		        : cli_usage(&cli,
		                    "%s: unknown output format; name it .json, .json.gz, .json.zst, .pftrace "
		                    "or .perfetto-trace",
		                    o.out);
	}
	if (!rc && !done) {
		struct conv c = {.o = &o};
		rc = convert(&c);
		cj_abort(&c.cj);
		pfo_free(c.pf);
		if (c.in && c.in != stdin)
			fclose(c.in);
	}
	if (o.crash_json)
		unlink(o.crash_json);
	free(o.crash_json);
	free(o.default_out);
	for (size_t i = 0; i < o.ncat_text; i++)
		free(o.cat_text[i]);
	free(o.cats);
	return rc;
}
