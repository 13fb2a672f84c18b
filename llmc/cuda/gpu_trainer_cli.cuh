// What the GPU trainers' command lines share (train_gpt2cu, train_vitcu): the
// data parallel flags (-pn, -pr, -pf), the build's program name and the parse
// step (the spec filled, the flags parsed, -pr checked against -pn).
#ifndef FOLDNORM_GPU_TRAINER_CLI_CUH
#define FOLDNORM_GPU_TRAINER_CLI_CUH

#include <string.h>

extern "C" {
#include "core/cli.h"
}

typedef struct {
    int num_processes;   // -pn: 0 = from mpirun's environment, else 1
    int process_rank;    // -pr
    const char *id_file; // -pf: shared file for the NCCL unique id
} GpuProcessArgs;

// -pn, -pr and -pf's flag-table entries, p a GpuProcessArgs *
#define GPU_PROCESS_CLI_FLAGS(p)                                                                 \
    {"-pn", CLI_INT, &(p)->num_processes, 0, 65536,                                              \
     "data parallel: number of processes, one GPU each, -b each (default:\n"                   \
     "mpirun's environment, else 1)", NULL, 0, 0},                                               \
    {"-pr", CLI_INT, &(p)->process_rank, 0, 65535, "this process's rank, 0 .. pn-1 (with -pn)", \
     NULL, 0, 0},                                                                                \
    {"-pf", CLI_STRING, &(p)->id_file, 0, 0,                                                     \
     "shared file through which rank 0 hands the NCCL id to the others;\n"                      \
     "must not exist at launch, rank 0 removes it once all have joined", "file", 0, 0}

// the build's name of a GPU trainer: train_gpt2cu, train_gpt2fp32cu, ...
#ifdef FOLDNORM_FP32
#define GPU_PROGRAM_NAME(base) base "fp32cu"
#else
#define GPU_PROGRAM_NAME(base) base "cu"
#endif

// Fills spec with the program's flags and parses argv (no positional
// arguments); exits with cli's usage error on a bad flag or -pr >= -pn.
static inline void gpu_trainer_parse(CliSpec *spec, const char *program, const char *about,
                                     CliFlag *flags, int num_flags, const GpuProcessArgs *p,
                                     int argc, char **argv) {
    memset(spec, 0, sizeof(*spec));
    spec->program = program;
    spec->synopsis = "[options]";
    spec->about = about;
    spec->flags = flags;
    spec->num_flags = num_flags;
    cli_parse(spec, argc, argv, NULL);
    if (p->num_processes > 0 && p->process_rank >= p->num_processes) {
        cli_error(spec, "-pn %d -pr %d: need 0 <= pr < pn", p->num_processes, p->process_rank);
    }
}

#endif
