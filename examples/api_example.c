/* The smallest use of the C API: trace a region and save it.
 *   api_example [OUTPUT]   (default trace.json; .json.gz and .json.zst compress) */
#include <stdio.h>

#include <strobe/strobe.h>

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "trace.json";
	int rc;
	if ((rc = strobe_init(NULL)) || (rc = strobe_prepare(0, NULL)) || (rc = strobe_start())) {
		fprintf(stderr, "strobe: %s: %s\n", strobe_status_string(rc), strobe_last_error());
		return 1;
	}
	uint64_t id = strobe_op_push("forward"); /* cpu_op; id is its External id */
	strobe_range_push("attention");          /* user_annotation */
	strobe_range_pop();
	strobe_op_pop();
	strobe_instant("checkpoint");
	strobe_counter("queue_depth", 3.0);

	strobe_trace *t = NULL;
	if ((rc = strobe_stop(&t)) || (rc = strobe_trace_save(t, out))) {
		fprintf(stderr, "strobe: %s: %s\n", strobe_status_string(rc), strobe_last_error());
		strobe_trace_destroy(t);
		return 1;
	}
	printf("op %llu; %zu activities written to %s\n", (unsigned long long)id,
	       strobe_trace_activity_count(t), out);
	strobe_trace_destroy(t);
	strobe_shutdown();
	return 0;
}
