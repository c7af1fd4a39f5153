/* C++ kernel names for every GPU backend: the C++ runtime's demangler,
 * found at run time so strobe itself does not need libstdc++. */
#ifndef STROBE_PROCESS_GPU_DEMANGLE_H
#define STROBE_PROCESS_GPU_DEMANGLE_H

/* The demangled form of an Itanium-mangled name in a malloc'ed string, or
 * NULL when it is not mangled, longer than 8192 bytes, or no demangler is
 * found (strb_gpu_kernel_name then keeps the raw name). */
char *strb_gpu_demangle(const char *mangled);

#endif
