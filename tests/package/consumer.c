/* A program outside the tree that uses an installed strobe. Also compiled as
 * C++ (the headers and STROBE_OPTS must work there too). */
#include <stdio.h>
#include <strobe/strobe.h>

/* A child profiler with no callbacks: takes part, adds nothing. */
static const struct strobe_profiler_ops quiet = STROBE_OPTS(strobe_profiler_ops, .name = "consumer");

int main(int argc, char **argv)
{
	strobe_trace *t = NULL;
	struct strobe_init_opts opts =
	    STROBE_OPTS(strobe_init_opts, .log_threshold = STROBE_INIT_LOG_LEVEL(STROBE_LOG_ERROR));
	if (argc < 2 || strobe_init(&opts) || strobe_register_profiler(&quiet, NULL) ||
	    strobe_prepare(0, NULL) || strobe_start())
		return 1;
	strobe_op_push("forward");
	strobe_op_pop();
	if (strobe_stop(&t) || strobe_trace_save(t, argv[1])) {
		fprintf(stderr, "consumer: %s\n", strobe_last_error());
		return 1;
	}
	strobe_trace_destroy(t);
	return 0;
}
