/* A program outside the tree that uses an installed strobe. */
#include <stdio.h>
#include <strobe/strobe.h>

int main(int argc, char **argv)
{
	strobe_trace *t = NULL;
	if (argc < 2 || strobe_init(NULL) || strobe_prepare(0, NULL) || strobe_start())
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
