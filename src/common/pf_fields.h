/* The Perfetto protobuf numbers strobe writes (common/pfenc.c) and reads
 * (tools/read/perfetto_reader.c): field numbers of the messages in
 * proto/strobe_perfetto.proto, which tests/unit/test_perfetto_schema.c
 * checks against Perfetto's published protos, and the enum values and wire
 * types they use. One list, so the writer and the reader cannot disagree.
 * The prefix names the message: PKT_ TracePacket, DEFAULTS_
 * TracePacketDefaults, SNAP_ ClockSnapshot, CLOCK_ ClockSnapshot.Clock, TD_
 * TrackDescriptor, TED_ TrackEventDefaults, PD_ ProcessDescriptor, THD_ ThreadDescriptor, CD_
 * CounterDescriptor, TE_ TrackEvent, DA_ DebugAnnotation, ID_ InternedData,
 * INTERNED_ EventCategory, EventName, DebugAnnotationName and
 * InternedString. */
#ifndef STROBE_COMMON_PF_FIELDS_H
#define STROBE_COMMON_PF_FIELDS_H

enum {
	PF_TRACE_PACKET = 1, /* Trace.packet */

	PF_PKT_TIMESTAMP = 8,
	PF_PKT_CLOCK_ID = 58, /* timestamp_clock_id */
	PF_PKT_TRACK_EVENT = 11,
	PF_PKT_TRACK_DESCRIPTOR = 60,
	PF_PKT_CLOCK_SNAPSHOT = 6,
	PF_PKT_SEQ_ID = 10, /* trusted_packet_sequence_id */
	PF_PKT_INTERNED = 12,
	PF_PKT_SEQ_FLAGS = 13,
	PF_PKT_DEFAULTS = 59,
	PF_PKT_FIRST_ON_SEQ = 87,

	PF_DEFAULTS_CLOCK_ID = 58,
	PF_DEFAULTS_TRACK_EVENT = 11, /* track_event_defaults */
	PF_TED_TRACK = 11,            /* TrackEventDefaults.track_uuid */

	PF_SNAP_CLOCKS = 1,
	PF_SNAP_PRIMARY = 2,
	PF_CLOCK_ID = 1,
	PF_CLOCK_TS = 2,
	PF_CLOCK_INCREMENTAL = 3, /* is_incremental */

	PF_TD_UUID = 1,
	PF_TD_PARENT = 5,
	PF_TD_NAME = 2,
	PF_TD_PROCESS = 3,
	PF_TD_THREAD = 4,
	PF_TD_COUNTER = 8,

	PF_PD_PID = 1,
	PF_PD_NAME = 6,
	PF_PD_SORT = 3, /* legacy_sort_index */
	PF_PD_LABELS = 8,

	PF_THD_PID = 1,
	PF_THD_TID = 2,
	PF_THD_SORT = 3, /* legacy_sort_index */
	PF_THD_NAME = 5,

	PF_CD_CATEGORIES = 2,

	PF_TE_TYPE = 9,
	PF_TE_TRACK = 11,
	PF_TE_NAME_IID = 10,
	PF_TE_NAME = 23,
	PF_TE_CATEGORY_IIDS = 3,
	PF_TE_CATEGORIES = 22,
	PF_TE_ANNOTATIONS = 4,
	PF_TE_COUNTER_INT = 30,
	PF_TE_COUNTER_DOUBLE = 44,
	PF_TE_FLOW_IDS = 47,
	PF_TE_TERMINATING_FLOW_IDS = 48,
	/* Read only: older producers' varint forms (flow_ids_old,
	 * terminating_flow_ids_old), not in strobe's subset. */
	PF_TE_FLOW_IDS_OLD = 36,
	PF_TE_TERMINATING_FLOW_IDS_OLD = 42,

	PF_DA_NAME_IID = 1,
	PF_DA_NAME = 10,
	PF_DA_BOOL = 2,
	PF_DA_UINT = 3,
	PF_DA_INT = 4,
	PF_DA_DOUBLE = 5,
	PF_DA_STRING = 6,
	PF_DA_POINTER = 7,     /* read only */
	PF_DA_JSON = 9,        /* legacy_json_value */
	PF_DA_STRING_IID = 17, /* string_value_iid */

	PF_ID_CATEGORIES = 1,
	PF_ID_NAMES = 2,
	PF_ID_ANNOTATION_NAMES = 3,
	PF_ID_ANNOTATION_VALUES = 29, /* debug_annotation_string_values */
	PF_INTERNED_IID = 1,
	PF_INTERNED_NAME = 2, /* name; InternedString's str */
};

/* TrackEvent.Type */
enum { PF_TYPE_SLICE_BEGIN = 1, PF_TYPE_SLICE_END = 2, PF_TYPE_INSTANT = 3, PF_TYPE_COUNTER = 4 };

/* TracePacket.SequenceFlags */
enum { PF_SEQ_CLEARED = 1, PF_SEQ_NEEDS_STATE = 2 };

/* BuiltinClock */
enum { PF_CLOCK_REALTIME = 1, PF_CLOCK_BOOTTIME = 6 };

/* Protobuf wire types. */
enum { PF_WT_VARINT = 0, PF_WT_I64 = 1, PF_WT_LEN = 2, PF_WT_I32 = 5 };

#endif
