// Swin on the GPU in the three norm modes of llmc/vision/swin.c (same parameters,
// same math, same AdamW, the same RMS/centred set: foldable, centring ops or
// the paper variant, from vision_config.h's swin_*_rms_in_cbwc), built from
// the GPU kernels: norm, GELU, cuBLASLt matmul, AdamW, CBWC, the patch
// embedding, the (shifted-)window attention (tc: swin_window_attention_tc.cuh;
// window: swin_window_attention.cuh), the
// patch merging gather (swin_patch_merge.cuh) and the label-smoothed loss.
// Parameters: fp32 master copy and a floatX copy the kernels read (the same
// buffer in fp32 builds); gradients fp32; activations floatX. On the device
// every tensor starts at a multiple of SWINCUDA_ALIGN elements (the norm and
// centring kernels read 16-byte packs; a relative position table of
// (2W-1)^2 NH floats would misalign the tensors after it): the host's
// file-order buffers are scattered in and gathered out per tensor.
// cbwc: V = P W (and P b) of every layer llmc/vision/swin.c centres are projected
// from the proxy weights before a forward that follows an update; their
// output gradient is centred before their backward (docs/math.md section 2).
#ifndef FOLDNORM_SWIN_CUDA_CUH
#define FOLDNORM_SWIN_CUDA_CUH

#include <math.h>
#include <string.h>

extern "C" {
#include "kernels/adamw.h"
#include "kernels/drop_path.h"
#include "vision/swin.h"
#include "core/utils.h"
#include "vision/vision_layout.h"
}

#include "adamw.cuh"
#include "cbwc.cuh"
#include "classifier_loss.cuh"
#include "cuda_common.cuh"
#include "cuda_params.cuh"
#include "drop_path.cuh"
#include "gelu.cuh"
#include "matmul_cublaslt.cuh"
#include "norm.cuh"
#include "patch_embed.cuh"
#include "reduce.cuh"
#include "step_scalars.cuh"
#include "swin_patch_merge.cuh"
#include "attention_kind.cuh"
#include "swin_window_attention.cuh"
#include "swin_window_attention_tc.cuh"

#define SWINCUDA_ALIGN 16 // elements: 64 bytes fp32, 32 bytes bf16

// one block's shapes, flags and activations (device pointers)
typedef struct {
    int C, NH, res, window, shift, N, T, nW, hidden;
    int foldable;         // its norms are RMS in cbwc, its proj and fc2 centred (as SwinBlock)
    SwinBlockOffsets off; // device offsets
    floatX *ln1, *qkv, *atty, *resid2, *ln2, *fch, *fch_gelu, *out;
    floatX *att; // window: the probabilities (B nW, NH, T, T)
    float *lse;  // tc: the log-sum-exp per row (B nW, NH, T)
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd;
} SwinBlockCuda;

typedef struct {
    int C_in, res_out, N_out;
    int foldable, centred_reduction; // as SwinMerge (swin.h)
    SwinMergeOffsets off;            // device offsets
    floatX *merged, *normed, *out;   // (B N_out, 4 C_in) x2, (B N_out, 2 C_in)
    float *mean, *rstd;
} SwinMergeCuda;

typedef struct {
    SwinConfig config;
    NormMode mode;
    AttentionKind attention; // tc or window
    int count; // parameter tensors
    size_t *file_offsets, *dev_offsets, *sizes;
    int *decayed;
    size_t num_parameters; // in the file
    size_t dev_parameters; // with the alignment padding
    SwinOffsets off;       // device offsets (off.blocks owned here)
    float *params_memory, *grads_memory, *m_memory, *v_memory;
    floatX *params_x_memory; // == params_memory in fp32 builds
    floatX *centred_memory;  // cbwc: V of the centred layers at their device offsets
    int centred_stale, adamw_step;
    int num_blocks, res0, PD, C_last, N_last;
    SwinBlockCuda *blocks;
    SwinMergeCuda merges[SWIN_MAX_STAGES]; // [0] unused
    int max_B, B;
    float *images;
    floatX *patches, *patch_out, *pn, *stream0, *lnf, *pooled, *logits, *dlogits;
    float *pn_mean, *pn_rstd, *lnf_mean, *lnf_rstd, *losses;
    // scratch
    floatX *d_a, *d_b, *dln, *datty, *branch, *dqkv, *dfch, *dfch_gelu, *dpooled;
    float *reduce;
    double *sumsq;
    int *labels;
    float *logits_host; // of the last swincuda_forward
    floatX *logits_x_host;
    float smoothing, mean_loss; // mean_loss: of the last swincuda_forward with labels, else -1
    int backward_ready;         // a forward with labels since the last backward
    // the mean loss of the last forward with labels, the clip AdamW reads (step_scalars.cuh)
    StepScalars *scalars, *scalars_host;
    int num_sms;
    MatmulContext mm;
    // drop-path: the (max_B, num_blocks, 2) scales of the next forwards and
    // backwards (swincuda_set_drop_path), applied while drop_active
    float *drop_scales;
    int drop_active;
    MixTargetsCuda mix; // mixup / cutmix targets of the next forwards (swincuda_set_mix_targets)
} SwinCuda;

// out = a + b (n elements), summed in fp32
__global__ void swincuda_add_kernel(floatX *out, const floatX *a, const floatX *b, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = from_float<floatX>(to_float(a[i]) + to_float(b[i]));
}

// pooled (B, C) = the mean of x (B, N, C) over its N tokens, in token order
__global__ void swincuda_pool_kernel(floatX *pooled, const floatX *x, int B, int N, int C) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * C)
        return;
    const int b = i / C, c = i % C;
    float sum = 0.0f;
    for (int t = 0; t < N; t++)
        sum += to_float(x[((size_t)b * N + t) * C + c]);
    pooled[i] = from_float<floatX>(sum / (float)N);
}

// dx (B, N, C) = dpooled / N broadcast over the tokens
__global__ void swincuda_pool_backward_kernel(floatX *dx, const floatX *dpooled, int B, int N,
                                              int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * N * C)
        return;
    const int c = (int)(i % C);
    const size_t b = i / ((size_t)N * C);
    dx[i] = from_float<floatX>(to_float(dpooled[b * C + c]) / (float)N);
}

static inline void swincuda_add(floatX *out, const floatX *a, const floatX *b, size_t n,
                                cudaStream_t st) {
    swincuda_add_kernel<<<ceil_div((long long)n, 256), 256, 0, st>>>(out, a, b, n);
    CUDA_CHECK_LAUNCH();
}

// the device offset of the tensor at file offset f
static inline size_t swincuda_remap(const SwinCuda *m, size_t f) {
    for (int i = 0; i < m->count; i++) {
        if (m->file_offsets[i] == f)
            return m->dev_offsets[i];
    }
    fatal("swincuda: no parameter tensor at offset %zu", f);
}

// every offset field of the host layout mapped to the device's
static inline void swincuda_remap_fields(const SwinCuda *m, size_t *fields, int n) {
    for (int i = 0; i < n; i++)
        fields[i] = swincuda_remap(m, fields[i]);
}

static inline void swincuda_layout(SwinCuda *m) {
    TensorTable table;
    SwinOffsets file_off;
    swin_layout(&m->config, &table, &file_off);
    m->count = table.count;
    m->file_offsets = (size_t *)malloc_check((size_t)m->count * sizeof(size_t), "swincuda offsets");
    m->dev_offsets = (size_t *)malloc_check((size_t)m->count * sizeof(size_t), "swincuda offsets");
    m->sizes = (size_t *)malloc_check((size_t)m->count * sizeof(size_t), "swincuda sizes");
    m->decayed = (int *)malloc_check((size_t)m->count * sizeof(int), "swincuda decay flags");
    size_t dev = 0;
    for (int i = 0; i < m->count; i++) {
        m->file_offsets[i] = table.offsets[i];
        m->sizes[i] = table.sizes[i];
        m->decayed[i] = table.decayed[i];
        m->dev_offsets[i] = dev;
        dev += (table.sizes[i] + SWINCUDA_ALIGN - 1) / SWINCUDA_ALIGN * SWINCUDA_ALIGN;
    }
    m->num_parameters = table.num_parameters;
    m->dev_parameters = dev;
    m->num_blocks = swin_num_blocks(&m->config);
    m->off = file_off;
    swincuda_remap_fields(m, &m->off.patchw, 8); // patchw .. headb
    for (int s = 1; s < m->config.num_stages; s++) {
        swincuda_remap_fields(m, (size_t *)&m->off.merges[s], 3);
    }
    for (int b = 0; b < m->num_blocks; b++) {
        swincuda_remap_fields(m, (size_t *)&m->off.blocks[b], 13);
    }
    tensor_table_free(&table);
}

// host file-order buffer <-> device padded buffer
static inline void swincuda_scatter(const SwinCuda *m, float *dev, const float *host) {
    CUDA_CHECK(cudaMemset(dev, 0, m->dev_parameters * sizeof(float)));
    for (int i = 0; i < m->count; i++) {
        CUDA_CHECK(cudaMemcpy(dev + m->dev_offsets[i], host + m->file_offsets[i],
                              m->sizes[i] * sizeof(float), cudaMemcpyHostToDevice));
    }
}
static inline void swincuda_gather(const SwinCuda *m, float *host, const float *dev) {
    for (int i = 0; i < m->count; i++) {
        CUDA_CHECK(cudaMemcpy(host + m->file_offsets[i], dev + m->dev_offsets[i],
                              m->sizes[i] * sizeof(float), cudaMemcpyDeviceToHost));
    }
}

static inline void swincuda_sync_params_x(SwinCuda *m) {
    cuda_params_sync_x(m->params_x_memory, m->params_memory, m->dev_parameters, m->mm.stream);
}

// The blocks' and merges' shapes: the host model's (llmc/vision/swin.c builds
// them from the config), each block and merge with its device offsets.
static inline void swincuda_build_shapes(SwinCuda *m, const Swin *host) {
    m->blocks = (SwinBlockCuda *)calloc_check((size_t)m->num_blocks, sizeof(SwinBlockCuda),
                                              "swincuda blocks");
    m->res0 = host->res0;
    m->PD = host->PD;
    m->C_last = host->C_last;
    m->N_last = host->N_last;
    for (int s = 1; s < m->config.num_stages; s++) {
        const SwinMerge *h = &host->merges[s];
        SwinMergeCuda *mg = &m->merges[s];
        mg->C_in = h->C_in;
        mg->res_out = h->res_out;
        mg->N_out = h->N_out;
        mg->off = m->off.merges[s];
        mg->foldable = h->rms_in_cbwc;
        mg->centred_reduction = h->centred_reduction;
    }
    for (int b = 0; b < m->num_blocks; b++) {
        const SwinBlock *h = &host->blocks[b];
        SwinBlockCuda *k = &m->blocks[b];
        k->C = h->C;
        k->NH = h->NH;
        k->res = h->res;
        k->window = h->window;
        k->shift = h->shift;
        k->N = h->N;
        k->T = h->T;
        k->nW = h->nW;
        k->hidden = h->hidden;
        k->foldable = h->rms_in_cbwc;
        k->off = m->off.blocks[b];
        if (k->C % PACK_X != 0 || (k->C / k->NH) <= 0) {
            fatal("swincuda: stage %d has C=%d, must be a multiple of %d", h->stage, k->C, PACK_X);
        }
    }
}

static inline SwinWindowShape swincuda_window_shape(const SwinBlockCuda *k, int B) {
    SwinWindowShape s = {B, k->res, k->window, k->shift, k->C, k->NH, 0};
    return s;
}

static inline void swincuda_allocate(SwinCuda *m, int max_B) {
    const size_t B = (size_t)max_B, E = (size_t)m->config.embed_dim;
    const size_t N0 = (size_t)m->res0 * m->res0, K = (size_t)m->config.num_classes;
    const SwinConfig *c = &m->config;
    m->images = cuda_alloc<float>(B * c->image_channels * c->image_size * c->image_size);
    m->patches = cuda_alloc<floatX>(B * N0 * m->PD);
    m->patch_out = cuda_alloc<floatX>(B * N0 * E);
    m->pn = cuda_alloc<floatX>(B * N0 * E);
    m->pn_mean = cuda_alloc<float>(B * N0);
    m->pn_rstd = cuda_alloc<float>(B * N0);
    m->stream0 = cuda_alloc<floatX>(B * N0 * E);
    // widest rows of the scratch: any stream (N C), merge input (N_out 4C), hidden, qkv
    size_t nc = B * N0 * E, nh = 0, rows = B * N0, reduce = 0, widest = K;
    for (int s = 1; s < c->num_stages; s++) {
        SwinMergeCuda *mg = &m->merges[s];
        const size_t n = B * mg->N_out, C4 = 4 * (size_t)mg->C_in;
        mg->merged = cuda_alloc<floatX>(n * C4);
        mg->normed = cuda_alloc<floatX>(n * C4);
        mg->mean = cuda_alloc<float>(n);
        mg->rstd = cuda_alloc<float>(n);
        mg->out = cuda_alloc<floatX>(n * 2 * mg->C_in);
        nc = n * C4 > nc ? n * C4 : nc;
        size_t r = norm_backward_scratch_floats((int)n, (int)C4, m->num_sms);
        reduce = r > reduce ? r : reduce;
    }
    for (int b = 0; b < m->num_blocks; b++) {
        SwinBlockCuda *k = &m->blocks[b];
        const size_t n = B * k->N, C = (size_t)k->C, H = (size_t)k->hidden;
        k->ln1 = cuda_alloc<floatX>(n * C);
        k->ln1_mean = cuda_alloc<float>(n);
        k->ln1_rstd = cuda_alloc<float>(n);
        k->qkv = cuda_alloc<floatX>(n * 3 * C);
        if (m->attention == ATTENTION_TC) {
            k->lse = cuda_alloc<float>(B * k->nW * k->NH * k->T);
        } else {
            k->att = cuda_alloc<floatX>(B * k->nW * k->NH * k->T * k->T);
        }
        k->atty = cuda_alloc<floatX>(n * C);
        k->resid2 = cuda_alloc<floatX>(n * C);
        k->ln2 = cuda_alloc<floatX>(n * C);
        k->ln2_mean = cuda_alloc<float>(n);
        k->ln2_rstd = cuda_alloc<float>(n);
        k->fch = cuda_alloc<floatX>(n * H);
        k->fch_gelu = cuda_alloc<floatX>(n * H);
        k->out = cuda_alloc<floatX>(n * C);
        nc = n * C > nc ? n * C : nc;
        nh = n * H > nh ? n * H : nh;
        widest = H > widest ? H : widest;
        widest = 3 * C > widest ? 3 * C : widest;
        size_t r = norm_backward_scratch_floats((int)n, (int)C, m->num_sms);
        reduce = r > reduce ? r : reduce;
        SwinWindowShape ws = swincuda_window_shape(k, max_B);
        swin_window_attention_check_shape(&ws);
        r = swin_window_attention_scratch_floats(&ws);
        reduce = r > reduce ? r : reduce;
    }
    reduce = norm_backward_scratch_floats((int)rows, (int)E, m->num_sms) > reduce
                 ? norm_backward_scratch_floats((int)rows, (int)E, m->num_sms)
                 : reduce;
    const size_t bias = (size_t)column_sum_chunks((int)rows) * widest;
    reduce = bias > reduce ? bias : reduce;
    const size_t NL = B * m->N_last * m->C_last;
    m->lnf = cuda_alloc<floatX>(NL);
    m->lnf_mean = cuda_alloc<float>(B * m->N_last);
    m->lnf_rstd = cuda_alloc<float>(B * m->N_last);
    m->pooled = cuda_alloc<floatX>(B * m->C_last);
    m->logits = cuda_alloc<floatX>(B * K);
    m->dlogits = cuda_alloc<floatX>(B * K);
    m->losses = cuda_alloc<float>(B);
    m->d_a = cuda_alloc<floatX>(nc);
    m->d_b = cuda_alloc<floatX>(nc);
    m->dln = cuda_alloc<floatX>(nc);
    m->datty = cuda_alloc<floatX>(nc);
    m->branch = cuda_alloc<floatX>(nc);
    m->drop_scales = cuda_alloc<float>(B * m->num_blocks * DROP_PATH_BRANCHES);
    m->dqkv = cuda_alloc<floatX>(3 * nc);
    m->dfch = cuda_alloc<floatX>(nh);
    m->dfch_gelu = cuda_alloc<floatX>(nh);
    m->dpooled = cuda_alloc<floatX>(B * m->C_last);
    m->reduce = cuda_alloc<float>(reduce);
    m->sumsq = cuda_alloc<double>(SUMSQ_BLOCKS);
    m->labels = cuda_alloc<int>(B);
    classifier_mix_alloc(&m->mix, B);
    step_scalars_alloc(&m->scalars, &m->scalars_host);
    m->logits_host = (float *)malloc_check(B * K * sizeof(float), "swincuda logits");
    m->logits_x_host = (floatX *)malloc_check(B * K * sizeof(floatX), "swincuda logits copy");
}

// Copies the parameters (and any AdamW moments) of a host Swin (loaded or
// initialised by llmc/vision/swin.c) and allocates everything for up to max_B
// images; attention: the window kernels (attention_kind.cuh: tc or window).
static inline void swincuda_init(SwinCuda *m, const Swin *host, int max_B,
                                 AttentionKind attention) {
    memset(m, 0, sizeof(*m));
    if (max_B <= 0)
        fatal("swincuda: batch size %d must be positive", max_B);
    const char *refusal = attention_kind_refusal(attention, true);
    if (refusal != NULL)
        fatal("swincuda: attention %s: %s", attention_kind_name(attention), refusal);
    m->attention = attention;
    m->config = host->config;
    m->mode = host->mode;
    norm_mode_require_gpu(m->mode, "swincuda");
    swincuda_layout(m);
    m->num_sms = cuda_device_sm_count();
    matmul_context_create(&m->mm);
    swincuda_build_shapes(m, host);
    const size_t P = m->dev_parameters;
    m->params_memory = cuda_alloc<float>(P);
    swincuda_scatter(m, m->params_memory, host->params_memory);
    m->params_x_memory = cuda_params_x_alloc(m->params_memory, P);
    swincuda_sync_params_x(m);
    m->grads_memory = cuda_alloc_zeroed(P);
    if (host->m_memory != NULL) {
        m->m_memory = cuda_alloc<float>(P);
        m->v_memory = cuda_alloc<float>(P);
        swincuda_scatter(m, m->m_memory, host->m_memory);
        swincuda_scatter(m, m->v_memory, host->v_memory);
    }
    m->adamw_step = host->adamw_step;
    m->centred_memory = cuda_alloc<floatX>(P);
    m->centred_stale = 1;
    swincuda_allocate(m, max_B);
    m->max_B = max_B;
    m->mean_loss = -1.0f;
}

// V = P W (and P b) of one centred layer (OC, IC) from the fp32 proxy
static inline void swincuda_project(SwinCuda *m, size_t w, const size_t *b, int OC, int IC) {
    const cudaStream_t st = m->mm.stream;
    dim3 grid(ceil_div(IC, CBWC_COLUMNS), 1);
    AdamWStep unused;
    memset(&unused, 0, sizeof(unused));
    cbwc_project_kernel<false><<<grid, CBWC_COLUMNS * CBWC_ROW_SLICES, 0, st>>>(
        m->centred_memory + w, m->params_memory + w, NULL, NULL, NULL, NULL, NULL, unused, OC, IC);
    CUDA_CHECK_LAUNCH();
    if (b != NULL)
        cbwc_centre_bias_cuda(m->centred_memory + *b, m->params_memory + *b, 1, OC, st);
}

// the centred layers of llmc/vision/swin.c's swin_refresh_centred
static inline void swincuda_cbwc_refresh(SwinCuda *m) {
    swincuda_project(m, m->off.patchw, &m->off.patchb, m->config.embed_dim, m->PD);
    for (int s = 1; s < m->config.num_stages; s++) {
        const SwinMergeCuda *mg = &m->merges[s];
        if (mg->centred_reduction)
            swincuda_project(m, mg->off.redw, NULL, 2 * mg->C_in, 4 * mg->C_in);
    }
    for (int i = 0; i < m->num_blocks; i++) {
        const SwinBlockCuda *k = &m->blocks[i];
        if (!k->foldable)
            continue;
        swincuda_project(m, k->off.projw, &k->off.projb, k->C, k->C);
        swincuda_project(m, k->off.fc2w, &k->off.fc2b, k->C, k->hidden);
    }
    m->centred_stale = 0;
}

// LN, or RMS for a foldable norm in cbwc and every norm in rms
static inline bool swincuda_layer(const SwinCuda *m, int foldable) {
    return norm_mode_kernel(m->mode, foldable).centre;
}

// the weights a layer reads: V for a centred layer in cbwc, else the proxy's floatX copy
static inline const floatX *swincuda_weights(const SwinCuda *m, size_t offset, int centred) {
    return (norm_policy(m->mode)->cbwc && centred ? m->centred_memory : m->params_x_memory) + offset;
}

// with drop-path on: branch j of block b (B N rows of width C) times its sample's scale
static inline void swincuda_drop_path(const SwinCuda *m, floatX *out, const floatX *in, int b,
                                      int j, int B, int N, int C) {
    drop_path_scale_cuda(out, in, m->drop_scales + DROP_PATH_BRANCHES * (size_t)b + j,
                         DROP_PATH_BRANCHES * (size_t)m->num_blocks, B, (size_t)N * C,
                         m->mm.stream);
}

// The drop-path scales (B, num_blocks, 2) of host memory (drop_path_draw's)
// that the following forwards of B images and their backwards apply, copied in
// stream order; NULL: none.
static inline void swincuda_set_drop_path(SwinCuda *m, const float *scales, int B) {
    m->drop_active = scales != NULL;
    if (scales == NULL)
        return;
    if (B > m->max_B || B <= 0)
        fatal("swincuda_set_drop_path: B=%d outside 1..%d", B, m->max_B);
    CUDA_CHECK(cudaMemcpyAsync(m->drop_scales, scales,
                               (size_t)B * m->num_blocks * DROP_PATH_BRANCHES * sizeof(float),
                               cudaMemcpyHostToDevice, m->mm.stream));
}

// The mixed targets of B host images for the following forwards and
// backwards (vitcuda_set_mix_targets).
static inline void swincuda_set_mix_targets(SwinCuda *m, MixTargets mix, int B) {
    if (B > m->max_B || B <= 0)
        fatal("swincuda_set_mix_targets: B=%d outside 1..%d", B, m->max_B);
    classifier_mix_upload(&m->mix, mix, B, m->mm.stream);
}

static inline void swincuda_block_forward(SwinCuda *m, SwinBlockCuda *k, const floatX *x, int B,
                                          int b) {
    const floatX *p = m->params_x_memory;
    const MatmulContext *mm = &m->mm;
    const cudaStream_t st = mm->stream;
    const int C = k->C, BN = B * k->N, H = k->hidden;
    const bool layer = swincuda_layer(m, k->foldable);
    const SwinBlockOffsets *o = &k->off;
    residual_norm_forward(layer, NULL, k->ln1, k->ln1_mean, k->ln1_rstd, x, NULL, p + o->ln1w,
                          p + o->ln1b, BN, C, st);
    matmul_forward_cuda(mm, k->qkv, k->ln1, p + o->qkvw, p + o->qkvb, BN, C, 3 * C);
    SwinWindowShape ws = swincuda_window_shape(k, B);
    if (m->attention == ATTENTION_TC)
        swin_window_attention_tc_forward_cuda(k->atty, k->lse, k->qkv, p + o->rpb, &ws, st);
    else
        swin_window_attention_forward_cuda(k->atty, k->att, k->qkv, p + o->rpb, &ws, st);
    matmul_forward_cuda(mm, m->branch, k->atty, swincuda_weights(m, o->projw, k->foldable),
                        swincuda_weights(m, o->projb, k->foldable), BN, C, C);
    if (m->drop_active)
        swincuda_drop_path(m, m->branch, m->branch, b, 0, B, k->N, C);
    residual_norm_forward(layer, k->resid2, k->ln2, k->ln2_mean, k->ln2_rstd, x, m->branch,
                          p + o->ln2w, p + o->ln2b, BN, C, st);
    matmul_forward_cuda(mm, k->fch, k->ln2, p + o->fcw, p + o->fcb, BN, C, H);
    gelu_forward_cuda(k->fch_gelu, k->fch, (size_t)BN * H, st);
    matmul_forward_cuda(mm, m->branch, k->fch_gelu, swincuda_weights(m, o->fc2w, k->foldable),
                        swincuda_weights(m, o->fc2b, k->foldable), BN, H, C);
    if (m->drop_active)
        swincuda_drop_path(m, m->branch, m->branch, b, 1, B, k->N, C);
    swincuda_add(k->out, k->resid2, m->branch, (size_t)BN * C, st);
}

// Forward of B host images (B, Cin, S, S); labels (B) may be NULL (no loss):
// queued, the mean loss kept on the device (scalars->loss), the logits in
// m->logits; swincuda_forward waits for them.
static inline void swincuda_forward_queued(SwinCuda *m, const float *images, const int *labels,
                                           float smoothing, int B) {
    if (B > m->max_B || B <= 0)
        fatal("swincuda_forward: B=%d outside 1..%d", B, m->max_B);
    const SwinConfig *c = &m->config;
    const MatmulContext *mm = &m->mm;
    const cudaStream_t st = mm->stream;
    const floatX *p = m->params_x_memory;
    const int E = c->embed_dim, BN0 = B * m->res0 * m->res0, K = c->num_classes;
    m->B = B;
    if (norm_policy(m->mode)->cbwc && m->centred_stale)
        swincuda_cbwc_refresh(m);
    CUDA_CHECK(cudaMemcpyAsync(m->images, images,
                               (size_t)B * c->image_channels * c->image_size * c->image_size *
                                   sizeof(float),
                               cudaMemcpyHostToDevice, st));
    patch_embed_forward_cuda(mm, m->patch_out, m->patches, m->images,
                             swincuda_weights(m, m->off.patchw, 1),
                             swincuda_weights(m, m->off.patchb, 1), B, c->image_channels,
                             c->image_size, c->patch_size, E);
    residual_norm_forward(swincuda_layer(m, 1), NULL, m->pn, m->pn_mean, m->pn_rstd, m->patch_out,
                          NULL, p + m->off.pnw, p + m->off.pnb, BN0, E, st);
    const floatX *x = m->pn;
    if (c->centre_ops) { // the explicit centring op
        centre_rows_cuda(m->stream0, m->pn, BN0, E, st);
        x = m->stream0;
    }
    for (int s = 0, b = 0; s < c->num_stages; s++) {
        if (s > 0) {
            SwinMergeCuda *mg = &m->merges[s];
            const int n = B * mg->N_out, C4 = 4 * mg->C_in;
            if (c->centre_ops) { // the explicit centring op before the merge
                centre_rows_cuda(m->branch, x, B * 4 * mg->N_out, mg->C_in, st);
                x = m->branch;
            }
            swin_patch_merge_forward_cuda(mg->merged, x, B, mg->res_out, mg->C_in, st);
            residual_norm_forward(swincuda_layer(m, mg->foldable), NULL, mg->normed, mg->mean,
                                  mg->rstd, mg->merged, NULL, p + mg->off.normw, p + mg->off.normb,
                                  n, C4, st);
            matmul_forward_cuda(mm, mg->out, mg->normed,
                                swincuda_weights(m, mg->off.redw, mg->centred_reduction), NULL, n,
                                C4, 2 * mg->C_in);
            x = mg->out;
        }
        for (int i = 0; i < c->depths[s]; i++, b++) {
            swincuda_block_forward(m, &m->blocks[b], x, B, b);
            x = m->blocks[b].out;
        }
    }
    const int CL = m->C_last, NL = m->N_last;
    const int last_foldable = swin_stage_rms_in_cbwc(c, c->num_stages - 1);
    residual_norm_forward(swincuda_layer(m, last_foldable), NULL, m->lnf, m->lnf_mean, m->lnf_rstd,
                          x, NULL, p + m->off.lnfw, p + m->off.lnfb, B * NL, CL, st);
    swincuda_pool_kernel<<<ceil_div(B * CL, 128), 128, 0, st>>>(m->pooled, m->lnf, B, NL, CL);
    CUDA_CHECK_LAUNCH();
    matmul_forward_cuda(mm, m->logits, m->pooled, p + m->off.headw, p + m->off.headb, B, CL, K);
    m->backward_ready = labels != NULL;
    if (labels != NULL) {
        CUDA_CHECK(cudaMemcpyAsync(m->labels, labels, (size_t)B * sizeof(int),
                                   cudaMemcpyHostToDevice, st));
        classifier_loss_cuda(m->losses, NULL, m->logits, m->labels, &m->mix, smoothing, 0.0f, B, K,
                             st);
        step_loss_reset(m->scalars, st); // loss_sum: this forward's mean loss alone
        step_loss_add(m->scalars, m->losses, B, B, st);
        m->smoothing = smoothing;
    }
}

// swincuda_forward_queued, then the logits (and the mean loss) on the host: waits for the GPU.
static inline void swincuda_forward(SwinCuda *m, const float *images, const int *labels,
                                    float smoothing, int B) {
    swincuda_forward_queued(m, images, labels, smoothing, B);
    const int K = m->config.num_classes;
    CUDA_CHECK(cudaMemcpyAsync(m->logits_x_host, m->logits, (size_t)B * K * sizeof(floatX),
                               cudaMemcpyDeviceToHost, m->mm.stream));
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    for (size_t i = 0; i < (size_t)B * K; i++)
        m->logits_host[i] = to_float(m->logits_x_host[i]);
    m->mean_loss = labels != NULL ? m->scalars_host->loss : -1.0f;
}

static inline void swincuda_zero_grad(SwinCuda *m) {
    CUDA_CHECK(
        cudaMemsetAsync(m->grads_memory, 0, m->dev_parameters * sizeof(float), m->mm.stream));
}

// dy of a layer: centred (into branch) for a centred layer in cbwc
static inline const floatX *swincuda_dy(SwinCuda *m, const floatX *d, int centred, int N, int OC) {
    if (!norm_policy(m->mode)->cbwc || !centred)
        return d;
    centre_rows_cuda(m->branch, d, N, OC, m->mm.stream);
    return m->branch;
}

// d holds the gradient of the block's output and leaves with its input's
static inline void swincuda_block_backward(SwinCuda *m, SwinBlockCuda *k, const floatX *x,
                                           floatX *d, int B, int b) {
    const floatX *p = m->params_x_memory;
    float *g = m->grads_memory;
    const MatmulContext *mm = &m->mm;
    const cudaStream_t st = mm->stream;
    const int C = k->C, BN = B * k->N, H = k->hidden;
    const bool layer = swincuda_layer(m, k->foldable);
    const SwinBlockOffsets *o = &k->off;
    // each branch's output gradient: d, times the sample's drop-path scale (into
    // branch, then centred there in place in cbwc: one warp per row)
    const floatX *dbranch = d;
    if (m->drop_active) {
        swincuda_drop_path(m, m->branch, d, b, 1, B, k->N, C);
        dbranch = m->branch;
    }
    const floatX *dy = swincuda_dy(m, dbranch, k->foldable, BN, C);
    column_sum_accumulate(g + o->fc2b, m->reduce, dy, BN, C, st);
    matmul_backward_cuda(mm, m->dfch_gelu, g + o->fc2w, dy, k->fch_gelu, p + o->fc2w, BN, H, C);
    gelu_backward_cuda(m->dfch, k->fch, m->dfch_gelu, (size_t)BN * H, st);
    column_sum_accumulate(g + o->fcb, m->reduce, m->dfch, BN, H, st);
    matmul_backward_cuda(mm, m->dln, g + o->fcw, m->dfch, k->ln2, p + o->fcw, BN, C, H);
    norm_backward(layer, d, g + o->ln2w, g + o->ln2b, m->reduce, m->dln, k->resid2, p + o->ln2w,
                  k->ln2_mean, k->ln2_rstd, BN, C, m->num_sms, st);
    dbranch = d;
    if (m->drop_active) {
        swincuda_drop_path(m, m->branch, d, b, 0, B, k->N, C);
        dbranch = m->branch;
    }
    dy = swincuda_dy(m, dbranch, k->foldable, BN, C);
    column_sum_accumulate(g + o->projb, m->reduce, dy, BN, C, st);
    matmul_backward_cuda(mm, m->datty, g + o->projw, dy, k->atty, p + o->projw, BN, C, C);
    SwinWindowShape ws = swincuda_window_shape(k, B);
    if (m->attention == ATTENTION_TC)
        swin_window_attention_tc_backward_cuda(m->dqkv, g + o->rpb, m->reduce, m->datty, k->atty,
                                               k->qkv, k->lse, p + o->rpb, &ws, st);
    else
        swin_window_attention_backward_cuda(m->dqkv, g + o->rpb, m->reduce, m->datty, k->qkv,
                                            k->att, &ws, st);
    column_sum_accumulate(g + o->qkvb, m->reduce, m->dqkv, BN, 3 * C, st);
    matmul_backward_cuda(mm, m->dln, g + o->qkvw, m->dqkv, k->ln1, p + o->qkvw, BN, C, 3 * C);
    norm_backward(layer, d, g + o->ln1w, g + o->ln1b, m->reduce, m->dln, x, p + o->ln1w,
                  k->ln1_mean, k->ln1_rstd, BN, C, m->num_sms, st);
}

// Accumulates the gradients of loss_scale * sum of per-image losses.
static inline void swincuda_backward(SwinCuda *m, float loss_scale) {
    if (!m->backward_ready)
        fatal("swincuda_backward: needs a forward pass with labels first");
    const SwinConfig *c = &m->config;
    const floatX *p = m->params_x_memory;
    float *g = m->grads_memory;
    const MatmulContext *mm = &m->mm;
    const cudaStream_t st = mm->stream;
    const int B = m->B, K = c->num_classes, CL = m->C_last, NL = m->N_last;
    const int E = c->embed_dim, BN0 = B * m->res0 * m->res0;
    classifier_loss_cuda(m->losses, m->dlogits, m->logits, m->labels, &m->mix, m->smoothing,
                         loss_scale, B, K, st);
    column_sum_accumulate(g + m->off.headb, m->reduce, m->dlogits, B, K, st);
    matmul_backward_cuda(mm, m->dpooled, g + m->off.headw, m->dlogits, m->pooled, p + m->off.headw,
                         B, CL, K);
    swincuda_pool_backward_kernel<<<ceil_div((long long)B * NL * CL, 256), 256, 0, st>>>(
        m->dln, m->dpooled, B, NL, CL);
    CUDA_CHECK_LAUNCH();
    floatX *d = m->d_a, *other = m->d_b;
    CUDA_CHECK(cudaMemsetAsync(d, 0, (size_t)B * NL * CL * sizeof(floatX), st));
    const floatX *x_last = m->num_blocks > 0 ? m->blocks[m->num_blocks - 1].out
                           : c->centre_ops   ? m->stream0
                                             : m->pn;
    const int last_foldable = swin_stage_rms_in_cbwc(c, c->num_stages - 1);
    norm_backward(swincuda_layer(m, last_foldable), d, g + m->off.lnfw, g + m->off.lnfb, m->reduce,
                  m->dln, x_last, p + m->off.lnfw, m->lnf_mean, m->lnf_rstd, B * NL, CL, m->num_sms,
                  st);
    const floatX *stream0 = c->centre_ops ? m->stream0 : m->pn;
    int b = m->num_blocks - 1;
    for (int s = c->num_stages - 1; s >= 0; s--) {
        for (int i = c->depths[s] - 1; i >= 0; i--, b--) {
            const floatX *x = i > 0 ? m->blocks[b - 1].out : s > 0 ? m->merges[s].out : stream0;
            swincuda_block_backward(m, &m->blocks[b], x, d, B, b);
        }
        if (s > 0) {
            SwinMergeCuda *mg = &m->merges[s];
            const int n = B * mg->N_out, C4 = 4 * mg->C_in;
            const floatX *dy = swincuda_dy(m, d, mg->centred_reduction, n, 2 * mg->C_in);
            matmul_backward_cuda(mm, m->dln, g + mg->off.redw, dy, mg->normed, p + mg->off.redw, n,
                                 C4, 2 * mg->C_in);
            CUDA_CHECK(cudaMemsetAsync(m->datty, 0, (size_t)n * C4 * sizeof(floatX), st));
            norm_backward(swincuda_layer(m, mg->foldable), m->datty, g + mg->off.normw,
                          g + mg->off.normb, m->reduce, m->dln, mg->merged, p + mg->off.normw,
                          mg->mean, mg->rstd, n, C4, m->num_sms, st);
            swin_patch_merge_backward_cuda(other, m->datty, B, mg->res_out, mg->C_in, st);
            if (c->centre_ops)
                centre_rows_cuda(other, other, B * 4 * mg->N_out, mg->C_in, st);
            floatX *t = d;
            d = other;
            other = t;
        }
    }
    if (c->centre_ops)
        centre_rows_cuda(d, d, BN0, E, st); // the centring op is its own adjoint
    CUDA_CHECK(cudaMemsetAsync(m->dln, 0, (size_t)BN0 * E * sizeof(floatX), st));
    norm_backward(swincuda_layer(m, 1), m->dln, g + m->off.pnw, g + m->off.pnb, m->reduce, d,
                  m->patch_out, p + m->off.pnw, m->pn_mean, m->pn_rstd, BN0, E, m->num_sms, st);
    const floatX *dpatch = swincuda_dy(m, m->dln, 1, BN0, E);
    patch_embed_backward_cuda(mm, g + m->off.patchw, g + m->off.patchb, m->reduce, dpatch,
                              m->patches, BN0, m->PD, E);
    m->backward_ready = 0;
}

// queues scalars->sumsq = the gradients' sum of squares
static inline void swincuda_grad_sum_of_squares(SwinCuda *m) {
    sum_of_squares_device(&m->scalars->sumsq, 0, m->grads_memory, m->dev_parameters, m->sumsq,
                          m->mm.stream);
}

// Queues one AdamW step (torch semantics, decay on the matrices only), the
// gradients clipped by the scale the GPU computed (scalars->clip, step_clip;
// no update at all when it says so).
static inline void swincuda_update_queued(SwinCuda *m, const AdamWConfig *cfg) {
    const size_t P = m->dev_parameters;
    cuda_moments_ensure(&m->m_memory, &m->v_memory, P);
    m->adamw_step += 1;
    const bool separate_x = (void *)m->params_x_memory != (void *)m->params_memory;
    for (int i = 0; i < m->count; i++) {
        AdamWStep step =
            adamw_step_constants(cfg->learning_rate, cfg->beta1, cfg->beta2, cfg->eps,
                                 cfg->weight_decay, m->decayed[i], m->adamw_step, 1.0f);
        step.clip = &m->scalars->clip;
        const size_t o = m->dev_offsets[i];
        adamw_update_cuda(m->params_memory + o, separate_x ? m->params_x_memory + o : NULL,
                          m->grads_memory + o, m->m_memory + o, m->v_memory + o, m->sizes[i], step,
                          m->mm.stream);
    }
    m->centred_stale = 1; // V is projected at the next forward
}

// One AdamW step with global norm clipping (clip <= 0: none), the norm and
// scale computed on the GPU; returns the gradient norm before clipping
// (waits for the GPU to read it).
static inline float swincuda_update(SwinCuda *m, const AdamWConfig *cfg, float grad_clip) {
    swincuda_grad_sum_of_squares(m);
    step_clip(m->scalars, grad_clip, 0, m->mm.stream);
    swincuda_update_queued(m, cfg);
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    return (float)m->scalars_host->norm;
}

// host copies in file order: fp32 parameters, gradients (num_parameters each)
static inline void swincuda_params_to_host(const SwinCuda *m, float *out) {
    CUDA_CHECK(cudaStreamSynchronize(m->mm.stream));
    swincuda_gather(m, out, m->params_memory);
}
static inline void swincuda_grads_to_host(const SwinCuda *m, float *out) {
    CUDA_CHECK(cudaStreamSynchronize(m->mm.stream));
    swincuda_gather(m, out, m->grads_memory);
}

static inline void swincuda_free(SwinCuda *m) {
    void *buffers[] = {
        m->params_memory, m->grads_memory, m->m_memory,  m->v_memory, m->centred_memory,
        m->images,        m->patches,      m->patch_out, m->pn,       m->stream0,
        m->lnf,           m->pooled,       m->logits,    m->dlogits,  m->pn_mean,
        m->pn_rstd,       m->lnf_mean,     m->lnf_rstd,  m->losses,   m->d_a,
        m->d_b,           m->dln,          m->datty,     m->branch,   m->dqkv,
        m->dfch,          m->dfch_gelu,    m->dpooled,   m->reduce,   m->sumsq,
        m->labels,        m->drop_scales,  m->mix.labels2, m->mix.lam};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) {
        if (buffers[i] != NULL)
            CUDA_CHECK(cudaFree(buffers[i]));
    }
    for (int s = 1; s < m->config.num_stages; s++) {
        SwinMergeCuda *mg = &m->merges[s];
        void *mb[] = {mg->merged, mg->normed, mg->out, mg->mean, mg->rstd};
        for (size_t i = 0; i < 5; i++)
            CUDA_CHECK(cudaFree(mb[i]));
    }
    for (int b = 0; b < m->num_blocks; b++) {
        SwinBlockCuda *k = &m->blocks[b];
        void *kb[] = {k->ln1,      k->qkv,      k->att,      k->lse,      k->atty,
                      k->resid2,   k->ln2,      k->fch,      k->fch_gelu, k->out,
                      k->ln1_mean, k->ln1_rstd, k->ln2_mean, k->ln2_rstd};
        for (size_t i = 0; i < sizeof(kb) / sizeof(kb[0]); i++)
            if (kb[i] != NULL)
                CUDA_CHECK(cudaFree(kb[i]));
    }
    cuda_params_x_free(m->params_x_memory, m->params_memory);
    free(m->blocks);
    free(m->off.blocks);
    free(m->file_offsets);
    free(m->dev_offsets);
    free(m->sizes);
    free(m->decayed);
    step_scalars_free(m->scalars, m->scalars_host);
    free(m->logits_host);
    free(m->logits_x_host);
    matmul_context_destroy(&m->mm);
    memset(m, 0, sizeof(*m));
}

#endif
