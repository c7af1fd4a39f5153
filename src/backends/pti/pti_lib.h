/* Intel PTI (libpti_view), loaded with dlopen (pti_lib.c). */
#ifndef STROBE_BACKENDS_PTI_LIB_H
#define STROBE_BACKENDS_PTI_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/pti/pti_abi.h"

struct strb_pti_lib {
	void *handle;
	char path[4096];
	pti_version_t version;
	char version_string[32]; /* ptiVersionString(), for the trace metadata */
	bool v2;                 /* the library writes v2 records */
	pti_set_callbacks_fn set_callbacks;
	pti_view_kind_fn enable, disable;
	pti_void_fn flush_all;
	pti_next_record_fn next_record;
	pti_push_external_fn push_external;
	pti_pop_external_fn pop_external;
	pti_set_timestamp_fn set_timestamp_callback;
	pti_api_name_fn api_name;
	pti_result_string_fn result_string;
	/* Optional (NULL when the library lacks them). */
	pti_api_class_fn enable_runtime_api_class;
	pti_type_string_fn memcpy_type_string, memory_type_string;
};

/* The library, kept once opened (thread-safe; retried while it fails); NULL
 * with why filled when it is missing or unusable. Search order: exactly
 * STROBE_PTI_PATH when set; else libpti_view.so.1 then libpti_view.so on the
 * loader path, in $ONEAPI_ROOT/lib and $ONEAPI_ROOT/pti/latest/lib, and in
 * the lib folder where the intel-pti Python wheel installs it
 * ($VIRTUAL_ENV, $CONDA_PREFIX, the prefix of python3 on PATH, ~/.local). */
const struct strb_pti_lib *strb_pti_load(char *why, size_t len);

/* A result's name from the library ("PTI_ERROR_NOT_IMPLEMENTED"), or its
 * number when the library has none for it. */
const char *strb_pti_result(const struct strb_pti_lib *lib, pti_result_t r, char *buf, size_t len);

#endif
