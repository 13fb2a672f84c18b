// What this machine and this build are, for CI logs and benchmark headers:
// the CPU model, the flags that decide the fast paths (avx2, fma, avx512f,
// avx512_bf16, amx), the instruction set the build was compiled for
// (-march=native on the machine that built it), oneDNN's ISA and whether it
// has a bf16 matmul here (else -mp bf16 takes the sgemm fallback), and
// OpenBLAS's kernel family, and the matmul router's table (which kernel runs
// which layer shape). Exits 1 when the build uses an instruction set
// extension this CPU lacks (objects built on another machine).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "kernels/matmul.h"
#include "kernels/matmul_dnnl.h"

// The value of the first "KEY : value" line of /proc/cpuinfo, or "" (a machine without it).
static void cpuinfo_field(const char *key, char *out, size_t size) {
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    char line[8192];
    const size_t key_len = strlen(key);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, key_len) == 0 && (line[key_len] == ' ' || line[key_len] == '\t' ||
                                                 line[key_len] == ':')) {
            const char *colon = strchr(line, ':');
            if (colon != NULL) {
                snprintf(out, size, "%s", colon + 1 + (colon[1] == ' '));
                out[strcspn(out, "\n")] = '\0';
            }
            break;
        }
    }
    fclose(f);
}

static int has_flag(const char *flags, const char *flag) {
    const size_t n = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += n) {
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int coretype_only = 0;
    CliFlag flags_spec[] = {
        {"-c", CLI_INT, &coretype_only, 0, 1,
         "1: print only the OPENBLAS_CORETYPE this CPU should have, or nothing where\n"
         "OpenBLAS picks well itself (scripts/demo.sh reads it) (default 0)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "cpu_info", .synopsis = "[options]",
                    .about = "This CPU's model and vector flags, what this build was compiled for,\n"
                             "oneDNN's ISA and bf16 matmul, OpenBLAS's kernel family and the\n"
                             "matmul routes.\n",
                    .flags = flags_spec, .num_flags = CLI_COUNT(flags_spec), .max_positional = 0};
    cli_parse(&spec, argc, argv, NULL);
    if (coretype_only) {
        const char *better = matmul_blas_better_core();
        if (better != NULL) {
            printf("%s\n", better);
        }
        return 0;
    }
    char model[256], flags[8192];
    cpuinfo_field("model name", model, sizeof(model));
    cpuinfo_field("flags", flags, sizeof(flags));
    static const char *const wanted[] = {"avx2", "fma", "avx512f", "avx512bw", "avx512_bf16",
                                         "amx_tile", "amx_bf16"};
    printf("cpu: %s |", model[0] ? model : "unknown (no /proc/cpuinfo)");
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
        printf(" %s%s", has_flag(flags, wanted[i]) ? "" : "no-", wanted[i]);
    }
    printf("\n");
    // what the compiler was allowed to emit (-march=native where this was built)
    struct {
        const char *flag;
        int used;
    } built[] = {
        {"avx2",
#ifdef __AVX2__
         1
#else
         0
#endif
        },
        {"fma",
#ifdef __FMA__
         1
#else
         0
#endif
        },
        {"avx512f",
#ifdef __AVX512F__
         1
#else
         0
#endif
        },
        {"avx512_bf16",
#ifdef __AVX512BF16__
         1
#else
         0
#endif
        },
    };
    int missing = 0;
    printf("build: compiled for");
    for (size_t i = 0; i < sizeof(built) / sizeof(built[0]); i++) {
        printf(" %s%s", built[i].used ? "" : "no-", built[i].flag);
        missing += built[i].used && flags[0] != '\0' && !has_flag(flags, built[i].flag);
    }
    printf(" | matmul %s\n", matmul_backend_name());
    char why[256] = "";
    DnnlMatmul *bf16 = dnnl_matmul_create(1, why, sizeof(why));
    printf("oneDNN: ISA %s | bf16 matmul: %s\n", dnnl_isa_name(),
           bf16 != NULL ? "yes (-mp bf16 runs on oneDNN)" : why);
    if (bf16 == NULL) {
        printf("        -mp bf16 runs the sgemm fallback on bf16-rounded inputs\n");
    }
    dnnl_matmul_free(bf16);
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    printf("OpenBLAS: core %s%s%s%s\n", matmul_blas_core(), coretype ? " (OPENBLAS_CORETYPE=" : "",
           coretype ? coretype : "", coretype ? ")" : "");
    matmul_blas_print_core_note();
    matmul_print_routes(stdout);
    if (missing) {
        printf("error: this build uses instructions this CPU lacks (built on another machine?): "
               "make clean && make\n");
        return 1;
    }
    return 0;
}
