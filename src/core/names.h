/* Names that annotation APIs (NVTX today) register once and refer to by
 * number afterwards: domains, categories, and names given to other threads.
 * Registration takes a lock (it is rare); the capture path only carries the
 * numbers, and processing turns them back into names. */
#ifndef STROBE_CORE_NAMES_H
#define STROBE_CORE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Domain 0 is the default one (strobe's own ranges and NVTX's default
 * domain). Domains are numbered from 1; at most STRB_DOMAINS_MAX - 1. */
#define STRB_DOMAINS_MAX 256

/* The number of the domain called name, registered on first use; equal
 * names share a number. 0 (the default domain) when name is NULL or empty,
 * or when the table is full (then the ranges land in the default domain). */
uint32_t strb_domain_register(const char *name);
/* Copies the domain's name into out (len bytes); false for an unknown one. */
bool strb_domain_name(uint32_t domain, char *out, size_t len);

/* Names category `id` of `domain` (a later name replaces an earlier one). */
void strb_category_set(uint32_t domain, uint32_t id, const char *name);
bool strb_category_name(uint32_t domain, uint32_t id, char *out, size_t len);

/* Names thread `tid` of this process, whichever thread asks. */
void strb_thread_name_by_tid(pid_t tid, const char *name);
bool strb_thread_name_lookup(pid_t tid, char *out, size_t len);

void strb_names_atfork_child(void);

/* The fatal-signal path: the domain table as a raw crash dump carries it,
 * this block then `count` names of STRB_RAW_DOMAIN_NAME bytes each,
 * NUL-terminated and zero-padded, indexed by domain number ([0], the
 * default domain, is empty; so is a name that could not be read). */
#define STRB_RAW_DOMAINS_MAGIC 0x534d4f44u /* "DOMS" */
#define STRB_RAW_DOMAIN_NAME   256
struct strb_raw_domains {
	uint32_t magic;
	uint32_t count;
};
/* Writes the block to fd with write() alone, reading the names through
 * strb_raw_peek: async-signal-safe, no lock, no allocation. Returns 0 or
 * -1 when fd fails. */
int strb_domains_write_raw(int fd);

#endif
