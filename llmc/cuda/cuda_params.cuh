// The parameter store the GPU models share (gpt2_cuda.cuh, vit_cuda.cuh,
// swin_cuda.cuh): typed device allocation, the fp32 master parameters and
// their floatX copy the kernels read (the same buffer in fp32 builds), zeroed
// gradients and AdamW moments, and the copy of the floatX side after an update.
// Each model keeps its own layout (which offsets the tensors have on device).
#ifndef FOLDNORM_CUDA_PARAMS_CUH
#define FOLDNORM_CUDA_PARAMS_CUH

#include "cuda_common.cuh"

// count elements of T on the device (at least one, so the pointer is never NULL)
template <typename T> static inline T *cuda_alloc(size_t count) {
    T *p = NULL;
    CUDA_CHECK(cudaMalloc((void **)&p, (count > 0 ? count : 1) * sizeof(T)));
    return p;
}

// a device copy of count host floats (parameters, a resumed model's moments)
static inline float *cuda_alloc_copy(const float *host, size_t count) {
    float *p = cuda_alloc<float>(count);
    CUDA_CHECK(cudaMemcpy(p, host, count * sizeof(float), cudaMemcpyHostToDevice));
    return p;
}

// count fp32 zeros on the device (gradients, fresh AdamW moments)
static inline float *cuda_alloc_zeroed(size_t count) {
    float *p = cuda_alloc<float>(count);
    CUDA_CHECK(cudaMemset(p, 0, count * sizeof(float)));
    return p;
}

// the kernels' copy of n fp32 parameters: params itself in fp32 builds
static inline floatX *cuda_params_x_alloc(float *params, size_t n) {
#ifdef FOLDNORM_FP32
    (void)n;
    return params;
#else
    (void)params;
    return cuda_alloc<floatX>(n);
#endif
}

// frees the floatX copy unless it is the fp32 buffer itself
static inline void cuda_params_x_free(floatX *params_x, float *params) {
    if ((void *)params_x != (void *)params) CUDA_CHECK(cudaFree(params_x));
}

__global__ void float_to_floatx_kernel(floatX *out, const float *in, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = from_float<floatX>(in[i]);
}

// params_x = floatX(params), n elements on stream; nothing when they are one buffer
static inline void cuda_params_sync_x(floatX *params_x, const float *params, size_t n,
                                      cudaStream_t stream) {
    if ((void *)params_x == (void *)params) return;
    float_to_floatx_kernel<<<ceil_div((long long)n, 256), 256, 0, stream>>>(params_x, params, n);
    CUDA_CHECK_LAUNCH();
}

// Points the n tensor pointers of a parameter struct (nothing but T * fields,
// in the layout's order: ParamsOf, ViTParamsOf) at consecutive slices of
// memory, sizes[i] elements each.
template <typename Params, typename T>
static inline void cuda_point_params(Params *p, int n, const size_t *sizes, T *memory) {
    T **fields = (T **)p;
    for (int i = 0; i < n; i++) {
        fields[i] = memory;
        memory += sizes[i];
    }
}

// The parameter store of a model M (GPT2Cuda, ViTCuda: the same field names),
// its param_sizes and num_parameters set: the device copy of the host's fp32
// parameters, their floatX copy, zeroed gradients, and the params, grads and
// params_x structs (num_tensors pointers each) pointed into them.
template <typename M>
static inline void cuda_model_params_init(M *m, const float *host_params, int num_tensors) {
    const size_t P = m->num_parameters;
    m->params_memory = cuda_alloc_copy(host_params, P);
    m->params_x_memory = cuda_params_x_alloc(m->params_memory, P);
    cuda_params_sync_x(m->params_x_memory, m->params_memory, P, m->mm.stream);
    m->grads_memory = cuda_alloc_zeroed(P);
    cuda_point_params(&m->params, num_tensors, m->param_sizes, m->params_memory);
    cuda_point_params(&m->grads, num_tensors, m->param_sizes, m->grads_memory);
    cuda_point_params(&m->params_x, num_tensors, m->param_sizes, m->params_x_memory);
}

// AdamW's m and v (n each), zeroed, unless they exist already (a resumed model)
static inline void cuda_moments_ensure(float **m, float **v, size_t n) {
    if (*m != NULL) return;
    *m = cuda_alloc_zeroed(n);
    *v = cuda_alloc_zeroed(n);
}

#endif
