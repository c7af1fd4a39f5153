/* libcupti, opened at run time: the function table and how it was found. */
#ifndef STROBE_BACKENDS_CUPTI_LIB_H
#define STROBE_BACKENDS_CUPTI_LIB_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

/* One pointer per function strobe calls, typed from the toolkit's own
 * prototypes so they cannot drift. */
#define STRB_CUPTI_REQUIRED(X)                                                                               \
	X(cuptiGetVersion)                                                                                   \
	X(cuptiGetResultString)                                                                              \
	X(cuptiActivityRegisterCallbacks)                                                                    \
	X(cuptiActivityEnable)                                                                               \
	X(cuptiActivityDisable)                                                                              \
	X(cuptiActivityFlushAll)                                                                             \
	X(cuptiActivityGetNextRecord)                                                                        \
	X(cuptiActivityGetNumDroppedRecords)                                                                 \
	X(cuptiActivityPushExternalCorrelationId)                                                            \
	X(cuptiActivityPopExternalCorrelationId)                                                             \
	X(cuptiActivityRegisterTimestampCallback)                                                            \
	X(cuptiGetCallbackName)                                                                              \
	X(cuptiSetThreadIdType)                                                                              \
	X(cuptiSubscribe)                                                                                    \
	X(cuptiUnsubscribe)

/* Missing in older libraries: the feature is simply off. */
#define STRB_CUPTI_OPTIONAL(X)                                                                               \
	X(cuptiSubscribe_v2)                                                                                 \
	X(cuptiActivityEnableRuntimeApi)                                                                     \
	X(cuptiActivityEnableDriverApi)                                                                      \
	X(cuptiActivityEnableCudaEventDeviceTimestamps)

struct strb_cupti_lib {
#define STRB_CUPTI_FIELD(name) __typeof__(&name) name;
	STRB_CUPTI_REQUIRED(STRB_CUPTI_FIELD)
	STRB_CUPTI_OPTIONAL(STRB_CUPTI_FIELD)
#undef STRB_CUPTI_FIELD
	uint32_t version; /* CUPTI_API_VERSION of the loaded library */
	char path[512];   /* what was loaded */
};

/* Loads libcupti once per process: STROBE_CUPTI_PATH if set (that exact
 * file), else the usual names and toolkit directories. Never unloaded.
 * Returns the table, or NULL with the reason in why. */
const struct strb_cupti_lib *strb_cupti_load(char *why, size_t why_len);

/* "CUPTI_ERROR_..." text for a result. */
const char *strb_cupti_result(CUptiResult r);

/* Record layouts that exist only from this version on (CUDA 13 fields). */
#define STRB_CUPTI_VERSION_13 130000u

#endif
