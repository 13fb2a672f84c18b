// -ga 1: cuBLASLt's top heuristic candidates timed once per matmul plan (at
// the plan's first call, on scratch outputs, so the step's values are not
// touched), the fastest kept, and the choice recorded in the run folder
// (MATMUL_ALGO_FILE) so a resumed run uses the same algorithms and stays bit
// for bit the run it continues. The file (docs/formats.md): a comment line,
// then one line a plan:
//   plan M N K TRANSA TRANSB EPILOGUE DTYPE ALIGN_A ALIGN_B ALIGN_D CANDIDATE W0 .. W7
// (EPILOGUE, DTYPE: the enum values of MatmulEpilogue and cudaDataType_t;
// W0 .. W7: cublasLtMatmulAlgo_t's eight 64-bit words in hex). A resumed run
// finds each recorded algorithm among the heuristic's candidates by its
// words, and stops with the reason where it is not there (another GPU or
// cuBLASLt version). FOLDNORM_MATMUL_ALGO_FORCE=k replaces the timing's
// choice by candidate k (the emulator, whose timings mean nothing, and tests).
#ifndef FOLDNORM_MATMUL_ALGO_CHOICE_CUH
#define FOLDNORM_MATMUL_ALGO_CHOICE_CUH

#include <errno.h>
#include <stdio.h>

#include "matmul_plan.cuh"

#define MATMUL_ALGO_FILE "matmul_algos.txt"
#define MATMUL_ALGO_CANDIDATES 8 // heuristic candidates timed a plan
#define MATMUL_ALGO_TIMED_RUNS 3 // a candidate's timed calls, after one warm-up

typedef struct {
    MatmulPlanKey key;
    int candidate;
    cublasLtMatmulAlgo_t algo;
} MatmulAlgoRecord;

struct MatmulAlgoChoice {
    char path[4096]; // the run folder's record; empty: not recorded (no -o)
    MatmulAlgoRecord *records;
    int count, capacity;
    int header_printed;
};

static inline void matmul_algo_append(MatmulAlgoChoice *c, const MatmulAlgoRecord *r) {
    if (c->count == c->capacity) {
        c->capacity = c->capacity ? 2 * c->capacity : 64;
        c->records = (MatmulAlgoRecord *)realloc(c->records, (size_t)c->capacity * sizeof(*r));
        if (c->records == NULL) {
            fprintf(stderr, "error: out of memory for the matmul algorithm records\n");
            exit(EXIT_FAILURE);
        }
    }
    c->records[c->count++] = *r;
}

// the records of path; exits naming the file and line on a malformed one
static inline void matmul_algo_load(MatmulAlgoChoice *c, const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "error: %s: cannot open: %s\n", path, strerror(errno));
        exit(EXIT_FAILURE);
    }
    char line[1024];
    for (int no = 1; fgets(line, sizeof(line), f) != NULL; no++) {
        if (line[0] == '#' || line[0] == '\n') continue;
        MatmulAlgoRecord r;
        memset(&r, 0, sizeof(r));
        int epi, dtype;
        unsigned long long w[8];
        const int got = sscanf(line,
                               "plan %d %d %d %d %d %d %d %u %u %u %d %llx %llx %llx %llx %llx "
                               "%llx %llx %llx",
                               &r.key.m, &r.key.n, &r.key.k, &r.key.trans_a, &r.key.trans_b, &epi,
                               &dtype, &r.key.align_a, &r.key.align_b, &r.key.align_d,
                               &r.candidate, &w[0], &w[1], &w[2], &w[3], &w[4], &w[5], &w[6],
                               &w[7]);
        if (got != 19 || epi < MATMUL_EPILOGUE_NONE || epi > MATMUL_EPILOGUE_BGRADB) {
            fclose(f);
            fprintf(stderr,
                    "error: %s line %d: not 'plan M N K TRANSA TRANSB EPILOGUE DTYPE ALIGN_A "
                    "ALIGN_B ALIGN_D CANDIDATE W0..W7' (W: 8 hex words)\n", path, no);
            exit(EXIT_FAILURE);
        }
        r.key.epilogue = (MatmulEpilogue)epi;
        r.key.d_type = (cudaDataType_t)dtype;
        static_assert(sizeof(r.algo) == sizeof(w), "cublasLtMatmulAlgo_t is 8 64-bit words");
        memcpy(&r.algo, w, sizeof(w));
        matmul_algo_append(c, &r);
    }
    fclose(f);
}

static inline void matmul_algo_write_line(FILE *f, const MatmulAlgoRecord *r) {
    unsigned long long w[8];
    memcpy(w, &r->algo, sizeof(w));
    const MatmulPlanKey *k = &r->key;
    fprintf(f, "plan %d %d %d %d %d %d %d %u %u %u %d", k->m, k->n, k->k, k->trans_a, k->trans_b,
            (int)k->epilogue, (int)k->d_type, k->align_a, k->align_b, k->align_d, r->candidate);
    for (int i = 0; i < 8; i++) fprintf(f, " %llx", w[i]);
    fprintf(f, "\n");
}

static inline int matmul_algo_file_exists(const char *path) {
    FILE *f = fopen(path, "r");
    if (f != NULL) fclose(f);
    return f != NULL;
}

// -ga: tune (0 or 1); run_dir: -o (may be NULL); resuming: the run continues
// a checkpoint in run_dir. A resumed run takes the algorithms its start took,
// or stops with the reason.
static inline void matmul_algo_choice_setup(MatmulContext *ctx, int tune, const char *run_dir,
                                            int resuming) {
    char path[4096] = "";
    if (run_dir != NULL) snprintf(path, sizeof(path), "%s/%s", run_dir, MATMUL_ALGO_FILE);
    const int recorded = path[0] != '\0' && matmul_algo_file_exists(path);
    if (!tune) {
        if (resuming && recorded) {
            fprintf(stderr,
                    "error: %s records the cuBLASLt algorithms this run chose with -ga 1; "
                    "resuming at -ga 0 would take the heuristic's first ones and not continue "
                    "it bit for bit: resume with -ga 1 (or remove the file to accept that)\n",
                    path);
            exit(EXIT_FAILURE);
        }
        ctx->choice = NULL;
        return;
    }
    if (resuming && path[0] != '\0' && !recorded) {
        fprintf(stderr,
                "error: -ga 1 resumes %s, which has no %s: the run started at -ga 0 (the "
                "heuristic's first algorithms); resume with -ga 0 to continue it bit for bit\n",
                run_dir, MATMUL_ALGO_FILE);
        exit(EXIT_FAILURE);
    }
    MatmulAlgoChoice *c = (MatmulAlgoChoice *)calloc(1, sizeof(MatmulAlgoChoice));
    if (c == NULL) {
        fprintf(stderr, "error: out of memory for the matmul algorithm choice\n");
        exit(EXIT_FAILURE);
    }
    snprintf(c->path, sizeof(c->path), "%s", path);
    if (resuming && recorded) {
        matmul_algo_load(c, path);
        printf("matmul algos: %d recorded plans from %s\n", c->count, path);
    } else if (path[0] != '\0') { // a new run: a new record
        FILE *f = fopen(path, "w");
        if (f == NULL) {
            fprintf(stderr, "error: %s: cannot write: %s\n", path, strerror(errno));
            exit(EXIT_FAILURE);
        }
        fprintf(f, "# foldnorm cuBLASLt algorithm choices (-ga 1), one plan a line: plan M N K "
                   "TRANSA TRANSB EPILOGUE DTYPE ALIGN_A ALIGN_B ALIGN_D CANDIDATE W0..W7\n");
        fclose(f);
    } else {
        printf("matmul algos: no -o, the choices are not recorded\n");
    }
    ctx->choice = c;
}

static inline void matmul_algo_choice_free(MatmulContext *ctx) {
    if (ctx->choice == NULL) return;
    free(ctx->choice->records);
    free(ctx->choice);
    ctx->choice = NULL;
}

// the call with scratch outputs (same sizes and alignments) in place of the real ones
static inline void matmul_algo_time_call(const MatmulContext *ctx, const MatmulPlan *p,
                                         const MatmulCall *call, const cublasLtMatmulAlgo_t *algo) {
    CUBLAS_CHECK(cublasLtMatmul(ctx->lt, p->op, &call->alpha, call->a, p->la, call->b, p->lb,
                                &call->beta, call->d, p->ld, call->d, p->ld, algo, ctx->workspace,
                                ctx->workspace_bytes, ctx->stream));
}

// mean milliseconds of candidate algo on scratch outputs
static inline float matmul_algo_time(const MatmulContext *ctx, const MatmulPlan *p,
                                     const MatmulCall *scratch, const cublasLtMatmulAlgo_t *algo) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    matmul_algo_time_call(ctx, p, scratch, algo); // warm-up
    CUDA_CHECK(cudaEventRecord(start, ctx->stream));
    for (int i = 0; i < MATMUL_ALGO_TIMED_RUNS; i++) matmul_algo_time_call(ctx, p, scratch, algo);
    CUDA_CHECK(cudaEventRecord(stop, ctx->stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return ms / MATMUL_ALGO_TIMED_RUNS;
}

static inline void matmul_algo_print(MatmulAlgoChoice *c, const MatmulPlan *p, int found,
                                     float ms, const char *how) {
    if (!c->header_printed) {
        printf("matmul algos | M N K transA transB epilogue output | candidate of found | "
               "ms | how\n");
        c->header_printed = 1;
    }
    const MatmulPlanKey *k = &p->key;
    printf("matmul algos | %d %d %d %d %d %s %s | %d of %d | %.4f | %s\n", k->m, k->n, k->k,
           k->trans_a, k->trans_b, matmul_epilogue_name(k->epilogue),
           k->d_type == CUDA_R_32F ? "fp32" : "bf16", p->candidate, found, (double)ms, how);
    fflush(stdout);
}

// Sets p->algo and p->candidate from the heuristic's `found` candidates:
// the recorded algorithm where the run folder has one for this key, else
// the fastest on scratch outputs (recorded). call: the plan's first call
// (its inputs are read, nothing it writes is touched).
static inline void matmul_algo_choose(const MatmulContext *ctx, MatmulPlan *p,
                                      const cublasLtMatmulHeuristicResult_t *cands, int found,
                                      const MatmulCall *call) {
    MatmulAlgoChoice *c = ctx->choice;
    for (int i = 0; i < c->count; i++) {
        const MatmulAlgoRecord *r = &c->records[i];
        if (!matmul_plan_key_equal(&r->key, &p->key)) continue;
        for (int j = 0; j < found; j++) {
            if (memcmp(&cands[j].algo, &r->algo, sizeof(r->algo)) == 0) {
                p->algo = cands[j].algo;
                p->candidate = j;
                matmul_algo_print(c, p, found, 0.0f, "recorded");
                return;
            }
        }
        fprintf(stderr,
                "error: %s: the algorithm recorded for m=%d n=%d k=%d (epilogue %s) is not among "
                "this cuBLASLt's %d candidates (another GPU or library version?): the run "
                "cannot continue bit for bit; start a new run folder\n",
                c->path, p->key.m, p->key.n, p->key.k, matmul_epilogue_name(p->key.epilogue),
                found);
        exit(EXIT_FAILURE);
    }
    // scratch outputs: D (read too where beta != 0), GELU's aux, the bias gradient
    const MatmulPlanKey *k = &p->key;
    const size_t d_bytes = (size_t)k->m * k->n * (k->d_type == CUDA_R_32F ? 4 : 2);
    MatmulCall scratch = *call;
    void *d = NULL, *aux = NULL, *bias = NULL;
    CUDA_CHECK(cudaMalloc(&d, d_bytes));
    CUDA_CHECK(cudaMemsetAsync(d, 0, d_bytes, ctx->stream));
    scratch.d = d;
    if (k->epilogue == MATMUL_EPILOGUE_GELU_AUX_BIAS) {
        CUDA_CHECK(cudaMalloc(&aux, (size_t)k->m * k->n * sizeof(floatX)));
        scratch.aux = aux;
    }
    if (k->epilogue == MATMUL_EPILOGUE_DGELU_BGRAD || k->epilogue == MATMUL_EPILOGUE_BGRADB) {
        CUDA_CHECK(cudaMalloc(&bias, (size_t)(k->m > k->n ? k->m : k->n) * sizeof(float)));
        scratch.bias = bias;
    }
    if (scratch.bias != NULL) {
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &scratch.bias, sizeof(scratch.bias)));
    }
    if (scratch.aux != NULL) {
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &scratch.aux, sizeof(scratch.aux)));
    }
    int best = 0;
    float ms[MATMUL_ALGO_CANDIDATES];
    for (int j = 0; j < found && j < MATMUL_ALGO_CANDIDATES; j++) {
        ms[j] = matmul_algo_time(ctx, p, &scratch, &cands[j].algo);
        if (ms[j] < ms[best]) best = j;
    }
    const char *how = "fastest";
    const char *force = getenv("FOLDNORM_MATMUL_ALGO_FORCE");
    if (force != NULL && force[0] != '\0') {
        const int want = atoi(force);
        best = want < 0 ? 0 : want < found ? want : found - 1;
        how = "FOLDNORM_MATMUL_ALGO_FORCE";
    }
    CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
    CUDA_CHECK(cudaFree(d));
    if (aux != NULL) CUDA_CHECK(cudaFree(aux));
    if (bias != NULL) CUDA_CHECK(cudaFree(bias));
    p->algo = cands[best].algo;
    p->candidate = best;
    MatmulAlgoRecord r;
    memset(&r, 0, sizeof(r));
    r.key = p->key;
    r.candidate = best;
    r.algo = p->algo;
    matmul_algo_append(c, &r);
    if (c->path[0] != '\0') {
        FILE *f = fopen(c->path, "a");
        if (f == NULL) {
            fprintf(stderr, "error: %s: cannot append: %s\n", c->path, strerror(errno));
            exit(EXIT_FAILURE);
        }
        matmul_algo_write_line(f, &r);
        if (fclose(f) != 0) {
            fprintf(stderr, "error: %s: cannot write: %s\n", c->path, strerror(errno));
            exit(EXIT_FAILURE);
        }
    }
    matmul_algo_print(c, p, found, ms[best], how);
}

#endif
