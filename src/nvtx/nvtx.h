/* NVTX capture (NVTX's injection interface). */
#ifndef STROBE_NVTX_NVTX_H
#define STROBE_NVTX_NVTX_H

/* Installs strobe's handlers in the function tables of the NVTX module that
 * owns get_export_table (its NvtxGetExportTableFunc_t). Returns 1 when they
 * are in place, 0 otherwise (NVTX then makes that module's calls no-ops).
 * Safe to call once per module, from any thread, concurrently. */
int strb_nvtx_inject(const void *get_export_table);

#endif
