/* proto/strobe_perfetto.proto against Perfetto's published schema: every
 * field and enum value of the subset has the number upstream gives it
 * (protos/perfetto/trace/..., copied below as facts), and the subset
 * declares nothing the table does not know. protoc compiles the subset to
 * a descriptor set and decodes that with descriptor.proto. */
#include "testutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROTO_DIR STROBE_TEST_DATA_DIR "/../../proto"

struct fact {
	const char *name; /* Message.field, Message.Nested.field or Enum.VALUE */
	int number;
};

/* From google/perfetto protos/perfetto/trace/{trace,trace_packet,
 * trace_packet_defaults,clock_snapshot,interned_data/interned_data}.proto,
 * common/builtin_clock.proto and track_event/{track_event,track_descriptor,
 * process_descriptor,thread_descriptor,counter_descriptor,
 * debug_annotation}.proto. */
static const struct fact upstream[] = {
    {"Trace.packet", 1},
    {"TracePacket.timestamp", 8},
    {"TracePacket.timestamp_clock_id", 58},
    {"TracePacket.track_event", 11},
    {"TracePacket.track_descriptor", 60},
    {"TracePacket.clock_snapshot", 6},
    {"TracePacket.trusted_packet_sequence_id", 10},
    {"TracePacket.interned_data", 12},
    {"TracePacket.sequence_flags", 13},
    {"TracePacket.trace_packet_defaults", 59},
    {"TracePacket.first_packet_on_sequence", 87},
    {"TracePacket.SequenceFlags.SEQ_UNSPECIFIED", 0},
    {"TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED", 1},
    {"TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE", 2},
    {"TracePacketDefaults.timestamp_clock_id", 58},
    {"TracePacketDefaults.track_event_defaults", 11},
    {"TrackEventDefaults.track_uuid", 11},
    {"BuiltinClock.BUILTIN_CLOCK_UNKNOWN", 0},
    {"BuiltinClock.BUILTIN_CLOCK_REALTIME", 1},
    {"BuiltinClock.BUILTIN_CLOCK_REALTIME_COARSE", 2},
    {"BuiltinClock.BUILTIN_CLOCK_MONOTONIC", 3},
    {"BuiltinClock.BUILTIN_CLOCK_MONOTONIC_COARSE", 4},
    {"BuiltinClock.BUILTIN_CLOCK_MONOTONIC_RAW", 5},
    {"BuiltinClock.BUILTIN_CLOCK_BOOTTIME", 6},
    {"ClockSnapshot.clocks", 1},
    {"ClockSnapshot.primary_trace_clock", 2},
    {"ClockSnapshot.Clock.clock_id", 1},
    {"ClockSnapshot.Clock.timestamp", 2},
    {"ClockSnapshot.Clock.is_incremental", 3},
    {"ClockSnapshot.Clock.unit_multiplier_ns", 4},
    {"TrackDescriptor.uuid", 1},
    {"TrackDescriptor.parent_uuid", 5},
    {"TrackDescriptor.name", 2},
    {"TrackDescriptor.process", 3},
    {"TrackDescriptor.thread", 4},
    {"TrackDescriptor.counter", 8},
    {"ProcessDescriptor.pid", 1},
    {"ProcessDescriptor.process_name", 6},
    {"ProcessDescriptor.legacy_sort_index", 3},
    {"ProcessDescriptor.process_labels", 8},
    {"ThreadDescriptor.pid", 1},
    {"ThreadDescriptor.tid", 2},
    {"ThreadDescriptor.legacy_sort_index", 3},
    {"ThreadDescriptor.thread_name", 5},
    {"CounterDescriptor.categories", 2},
    {"CounterDescriptor.unit", 3},
    {"CounterDescriptor.Unit.UNIT_UNSPECIFIED", 0},
    {"CounterDescriptor.Unit.UNIT_TIME_NS", 1},
    {"CounterDescriptor.Unit.UNIT_COUNT", 2},
    {"CounterDescriptor.Unit.UNIT_SIZE_BYTES", 3},
    {"TrackEvent.type", 9},
    {"TrackEvent.track_uuid", 11},
    {"TrackEvent.name_iid", 10},
    {"TrackEvent.name", 23},
    {"TrackEvent.category_iids", 3},
    {"TrackEvent.categories", 22},
    {"TrackEvent.debug_annotations", 4},
    {"TrackEvent.counter_value", 30},
    {"TrackEvent.double_counter_value", 44},
    {"TrackEvent.flow_ids", 47},
    {"TrackEvent.terminating_flow_ids", 48},
    {"TrackEvent.Type.TYPE_UNSPECIFIED", 0},
    {"TrackEvent.Type.TYPE_SLICE_BEGIN", 1},
    {"TrackEvent.Type.TYPE_SLICE_END", 2},
    {"TrackEvent.Type.TYPE_INSTANT", 3},
    {"TrackEvent.Type.TYPE_COUNTER", 4},
    {"DebugAnnotation.name_iid", 1},
    {"DebugAnnotation.name", 10},
    {"DebugAnnotation.bool_value", 2},
    {"DebugAnnotation.uint_value", 3},
    {"DebugAnnotation.int_value", 4},
    {"DebugAnnotation.double_value", 5},
    {"DebugAnnotation.string_value", 6},
    {"DebugAnnotation.legacy_json_value", 9},
    {"DebugAnnotation.string_value_iid", 17},
    {"InternedData.event_categories", 1},
    {"InternedData.event_names", 2},
    {"InternedData.debug_annotation_names", 3},
    {"InternedData.debug_annotation_string_values", 29},
    {"InternedString.iid", 1},
    {"InternedString.str", 2},
    {"EventCategory.iid", 1},
    {"EventCategory.name", 2},
    {"EventName.iid", 1},
    {"EventName.name", 2},
    {"DebugAnnotationName.iid", 1},
    {"DebugAnnotationName.name", 2},
};
#define NFACTS (sizeof(upstream) / sizeof(upstream[0]))

/* Walks the text form of the FileDescriptorSet and checks each field and
 * enum value it declares. */
static void check_declared(char *text, bool seen[NFACTS])
{
	enum { F_MESSAGE, F_ENUM, F_FIELD, F_VALUE, F_OTHER };
	int kind[32];
	char name[32][128];
	int number[32];
	int depth = 0;
	size_t declared = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		while (*line == ' ')
			line++;
		size_t len = strlen(line);
		if (len >= 2 && line[len - 1] == '{') {
			assert_true(depth < 32);
			kind[depth] = !strncmp(line, "message_type", 12) || !strncmp(line, "nested_type", 11)
			                  ? F_MESSAGE
			              : !strncmp(line, "enum_type", 9) ? F_ENUM
			              : !strncmp(line, "field", 5)     ? F_FIELD
			              : !strncmp(line, "value", 5)     ? F_VALUE
			                                               : F_OTHER;
			name[depth][0] = 0;
			number[depth] = -1;
			depth++;
			continue;
		}
		if (!strcmp(line, "}")) {
			depth--;
			if (kind[depth] != F_FIELD && kind[depth] != F_VALUE)
				continue;
			char full[512] = "";
			for (int i = 0; i <= depth; i++) {
				if (kind[i] == F_OTHER || !name[i][0])
					continue;
				if (*full)
					strcat(full, ".");
				strcat(full, name[i]);
			}
			declared++;
			size_t f;
			for (f = 0; f < NFACTS && strcmp(upstream[f].name, full); f++)
				;
			if (f == NFACTS)
				fail_msg("%s = %d is not in the table of upstream numbers", full,
				         number[depth]);
			if (upstream[f].number != number[depth])
				fail_msg("%s is %d in the subset, %d upstream", full, number[depth],
				         upstream[f].number);
			seen[f] = true;
			continue;
		}
		if (depth && !strncmp(line, "name: \"", 7)) {
			char *q = strchr(line + 7, '"');
			if (q)
				*q = 0;
			/* A file's name line sits at depth 1 in kind F_OTHER: ignored above. */
			snprintf(name[depth - 1], sizeof(name[0]), "%s", line + 7);
		} else if (depth && !strncmp(line, "number: ", 8)) {
			number[depth - 1] = atoi(line + 8);
		}
	}
	assert_true(declared > 0);
}

static void test_field_numbers_match_upstream(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp();
	char cmd[8192];
	snprintf(cmd, sizeof(cmd),
	         "protoc --proto_path=%s --descriptor_set_out=%.3000s/set.pb strobe_perfetto.proto && "
	         "protoc --proto_path=/usr/include --decode=google.protobuf.FileDescriptorSet "
	         "google/protobuf/descriptor.proto < %.3000s/set.pb",
	         PROTO_DIR, dir, dir);
	char *out = NULL;
	int rc = tu_run(cmd, 1, &out);
	if (rc)
		fail_msg("protoc failed (%d): %s", rc, out ? out : "");
	bool seen[NFACTS] = {false};
	check_declared(out, seen);
	for (size_t f = 0; f < NFACTS; f++)
		if (!seen[f])
			fail_msg("%s is in the table but not declared in the subset", upstream[f].name);
	free(out);
	tu_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_field_numbers_match_upstream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
