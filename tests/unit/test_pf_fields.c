/* common/pf_fields.h, the numbers the Perfetto encoder writes and the
 * reader reads, against proto/strobe_perfetto.proto (which
 * test_perfetto_schema.c checks against upstream): every name of the header
 * has the number the schema gives its field or enum value, and every field
 * the schema declares has a name in the header. */
#include "testutil.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pf_fields.h"

#define PROTO STROBE_TEST_DATA_DIR "/../../proto/strobe_perfetto.proto"

struct name {
	const char *schema; /* Message.field, Message.Nested.field or Enum.VALUE */
	int number;
};

static const struct name header[] = {
    {"Trace.packet", PF_TRACE_PACKET},
    {"TracePacket.timestamp", PF_PKT_TIMESTAMP},
    {"TracePacket.timestamp_clock_id", PF_PKT_CLOCK_ID},
    {"TracePacket.track_event", PF_PKT_TRACK_EVENT},
    {"TracePacket.track_descriptor", PF_PKT_TRACK_DESCRIPTOR},
    {"TracePacket.clock_snapshot", PF_PKT_CLOCK_SNAPSHOT},
    {"TracePacket.trusted_packet_sequence_id", PF_PKT_SEQ_ID},
    {"TracePacket.interned_data", PF_PKT_INTERNED},
    {"TracePacket.sequence_flags", PF_PKT_SEQ_FLAGS},
    {"TracePacket.trace_packet_defaults", PF_PKT_DEFAULTS},
    {"TracePacket.first_packet_on_sequence", PF_PKT_FIRST_ON_SEQ},
    {"TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED", PF_SEQ_CLEARED},
    {"TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE", PF_SEQ_NEEDS_STATE},
    {"TracePacketDefaults.timestamp_clock_id", PF_DEFAULTS_CLOCK_ID},
    {"TracePacketDefaults.track_event_defaults", PF_DEFAULTS_TRACK_EVENT},
    {"TrackEventDefaults.track_uuid", PF_TED_TRACK},
    {"BuiltinClock.BUILTIN_CLOCK_REALTIME", PF_CLOCK_REALTIME},
    {"BuiltinClock.BUILTIN_CLOCK_BOOTTIME", PF_CLOCK_BOOTTIME},
    {"ClockSnapshot.clocks", PF_SNAP_CLOCKS},
    {"ClockSnapshot.primary_trace_clock", PF_SNAP_PRIMARY},
    {"ClockSnapshot.Clock.clock_id", PF_CLOCK_ID},
    {"ClockSnapshot.Clock.timestamp", PF_CLOCK_TS},
    {"ClockSnapshot.Clock.is_incremental", PF_CLOCK_INCREMENTAL},
    {"TrackDescriptor.uuid", PF_TD_UUID},
    {"TrackDescriptor.parent_uuid", PF_TD_PARENT},
    {"TrackDescriptor.name", PF_TD_NAME},
    {"TrackDescriptor.process", PF_TD_PROCESS},
    {"TrackDescriptor.thread", PF_TD_THREAD},
    {"TrackDescriptor.counter", PF_TD_COUNTER},
    {"ProcessDescriptor.pid", PF_PD_PID},
    {"ProcessDescriptor.process_name", PF_PD_NAME},
    {"ProcessDescriptor.legacy_sort_index", PF_PD_SORT},
    {"ProcessDescriptor.process_labels", PF_PD_LABELS},
    {"ThreadDescriptor.pid", PF_THD_PID},
    {"ThreadDescriptor.tid", PF_THD_TID},
    {"ThreadDescriptor.legacy_sort_index", PF_THD_SORT},
    {"ThreadDescriptor.thread_name", PF_THD_NAME},
    {"CounterDescriptor.categories", PF_CD_CATEGORIES},
    {"TrackEvent.type", PF_TE_TYPE},
    {"TrackEvent.track_uuid", PF_TE_TRACK},
    {"TrackEvent.name_iid", PF_TE_NAME_IID},
    {"TrackEvent.name", PF_TE_NAME},
    {"TrackEvent.category_iids", PF_TE_CATEGORY_IIDS},
    {"TrackEvent.categories", PF_TE_CATEGORIES},
    {"TrackEvent.debug_annotations", PF_TE_ANNOTATIONS},
    {"TrackEvent.counter_value", PF_TE_COUNTER_INT},
    {"TrackEvent.double_counter_value", PF_TE_COUNTER_DOUBLE},
    {"TrackEvent.flow_ids", PF_TE_FLOW_IDS},
    {"TrackEvent.terminating_flow_ids", PF_TE_TERMINATING_FLOW_IDS},
    {"TrackEvent.Type.TYPE_SLICE_BEGIN", PF_TYPE_SLICE_BEGIN},
    {"TrackEvent.Type.TYPE_SLICE_END", PF_TYPE_SLICE_END},
    {"TrackEvent.Type.TYPE_INSTANT", PF_TYPE_INSTANT},
    {"TrackEvent.Type.TYPE_COUNTER", PF_TYPE_COUNTER},
    {"DebugAnnotation.name_iid", PF_DA_NAME_IID},
    {"DebugAnnotation.name", PF_DA_NAME},
    {"DebugAnnotation.bool_value", PF_DA_BOOL},
    {"DebugAnnotation.uint_value", PF_DA_UINT},
    {"DebugAnnotation.int_value", PF_DA_INT},
    {"DebugAnnotation.double_value", PF_DA_DOUBLE},
    {"DebugAnnotation.string_value", PF_DA_STRING},
    {"DebugAnnotation.string_value_iid", PF_DA_STRING_IID},
    {"DebugAnnotation.legacy_json_value", PF_DA_JSON},
    {"InternedData.event_categories", PF_ID_CATEGORIES},
    {"InternedData.event_names", PF_ID_NAMES},
    {"InternedData.debug_annotation_names", PF_ID_ANNOTATION_NAMES},
    {"InternedData.debug_annotation_string_values", PF_ID_ANNOTATION_VALUES},
    {"InternedString.iid", PF_INTERNED_IID},
    {"InternedString.str", PF_INTERNED_NAME},
    {"EventCategory.iid", PF_INTERNED_IID},
    {"EventCategory.name", PF_INTERNED_NAME},
    {"EventName.iid", PF_INTERNED_IID},
    {"EventName.name", PF_INTERNED_NAME},
    {"DebugAnnotationName.iid", PF_INTERNED_IID},
    {"DebugAnnotationName.name", PF_INTERNED_NAME},
};
#define NHEADER (sizeof(header) / sizeof(header[0]))

/* Fields the schema declares that neither side uses (no name needed). */
static const char *const unused[] = {
    "ClockSnapshot.Clock.unit_multiplier_ns",
    "CounterDescriptor.unit",
};

/* Calls check for each field and enum value of the .proto text: its full
 * name and number. Messages and enums nest; oneof only groups fields. */
static void each_number(char *text, void (*check)(const char *full, int number, void *arg), void *arg)
{
	char scope[16][128];
	bool named[16];
	int depth = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		while (isspace((unsigned char)*line))
			line++;
		if (!strncmp(line, "//", 2) || !*line)
			continue;
		char word[128], name[128];
		int number;
		if (sscanf(line, "message %127s {", name) == 1 || sscanf(line, "enum %127s {", name) == 1) {
			assert_true(depth < 16);
			snprintf(scope[depth], sizeof(scope[0]), "%s", name);
			named[depth++] = true;
		} else if (sscanf(line, "oneof %127s {", name) == 1) {
			assert_true(depth < 16);
			named[depth++] = false;
		} else if (line[0] == '}') {
			assert_true(depth > 0);
			depth--;
		} else if (sscanf(line, "%127s %*s %127s = %d", word, name, &number) == 3 ||
		           sscanf(line, "%127s %127s = %d", word, name, &number) == 3 ||
		           sscanf(line, "%127s = %d", name, &number) == 2) {
			char full[1024] = "";
			for (int i = 0; i < depth; i++)
				if (named[i]) {
					strcat(full, scope[i]);
					strcat(full, ".");
				}
			strcat(full, name);
			check(full, number, arg);
		}
	}
}

struct seen {
	bool header[NHEADER];
	size_t fields;
};

static void check_one(const char *full, int number, void *arg)
{
	struct seen *s = arg;
	bool named = false;
	for (size_t i = 0; i < NHEADER; i++)
		if (!strcmp(header[i].schema, full)) {
			if (header[i].number != number)
				fail_msg("%s is %d in the schema, %d in pf_fields.h", full, number,
				         header[i].number);
			s->header[i] = named = true;
		}
	s->fields++;
	const char *last = strrchr(full, '.');
	last = last ? last + 1 : full;
	if (named || isupper((unsigned char)*last))
		return; /* enum values (upper case) the code does not use need no name */
	for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++)
		if (!strcmp(unused[i], full))
			return;
	fail_msg("the schema's %s = %d has no name in pf_fields.h", full, number);
}

static void test_header_matches_schema(void **state)
{
	(void)state;
	char *text = tu_read_file(PROTO, NULL);
	assert_non_null(text);
	struct seen s = {0};
	each_number(text, check_one, &s);
	assert_true(s.fields > 50);
	for (size_t i = 0; i < NHEADER; i++)
		if (!s.header[i])
			fail_msg("pf_fields.h names %s, which the schema does not declare", header[i].schema);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header_matches_schema),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
