/* The one logging module: stderr plus observers, with a per-file tag. */
#ifndef STROBE_COMMON_LOG_H
#define STROBE_COMMON_LOG_H

#include "strobe/strobe.h"

/* Each .c file that logs defines LOG_TAG before including this header. */
#ifndef LOG_TAG
#define LOG_TAG "strobe"
#endif

void strb_log(enum strobe_log_level level, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True when a message at this level would go anywhere. */
bool strb_log_enabled(enum strobe_log_level level);
/* Reads STROBE_LOG_LEVEL / KINETO_LOG_LEVEL; called by strobe_init. */
void strb_log_init_from_env(void);
/* VERBOSE_LOG_MODULES: verbose messages only from these modules (log tags,
 * comma-separated; "cupti.c" counts as "cupti"); NULL or "" = all. */
void strb_log_set_verbose_modules(const char *list);
/* fork child: the lock may have been held by a thread that is gone. */
void strb_log_atfork_child(void);

#define LOGV(...) strb_log(STROBE_LOG_VERBOSE, LOG_TAG, __VA_ARGS__)
#define LOGI(...) strb_log(STROBE_LOG_INFO, LOG_TAG, __VA_ARGS__)
#define LOGW(...) strb_log(STROBE_LOG_WARNING, LOG_TAG, __VA_ARGS__)
#define LOGE(...) strb_log(STROBE_LOG_ERROR, LOG_TAG, __VA_ARGS__)

#endif
