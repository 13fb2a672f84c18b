// CUDA emulation (a logic check, not a device run): the runtime API subset
// foldnorm uses. Memory is host memory handed out 0xFF-filled (NaN as fp32
// and bf16), so a read of never-written device memory poisons the results;
// stream 0 runs its work at once, a created stream's waits in a queue until
// an event wait or a synchronize forces it (dev/cuda/emu/emu_streams.cpp).
// dev/cuda/emu/emu_runtime.cpp.
#ifndef FOLDNORM_EMU_CUDA_RUNTIME_H
#define FOLDNORM_EMU_CUDA_RUNTIME_H

#include "emu_kernel.h"

typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorNotReady = 600,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureIsolation = 905,
    cudaErrorStreamCaptureImplicit = 906,
} cudaError_t;

typedef enum {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
} cudaMemcpyKind;

typedef enum {
    CUDA_R_16F = 2,
    CUDA_R_32F = 0,
    CUDA_R_64F = 1,
    CUDA_R_16BF = 14,
    CUDA_R_8I = 3,
    CUDA_R_32I = 10,
} cudaDataType_t;
typedef cudaDataType_t cudaDataType;

typedef enum {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
} cudaFuncAttribute;

typedef enum {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
} cudaDeviceAttr;

typedef struct {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;
    size_t sharedMemPerMultiprocessor;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int maxThreadsPerMultiProcessor;
    int multiProcessorCount;
    int major, minor;
    int clockRate;
    int memoryClockRate;
    int memoryBusWidth;
    int l2CacheSize;
} cudaDeviceProp;

typedef struct emu_event *cudaEvent_t;
#define cudaStreamNonBlocking 1
#define cudaEventDisableTiming 2
#define cudaEventDefault 0

cudaError_t cudaMalloc(void **p, size_t bytes);
template <typename T> inline cudaError_t cudaMalloc(T **p, size_t bytes) {
    return cudaMalloc((void **)p, bytes);
}
cudaError_t cudaMallocHost(void **p, size_t bytes);
template <typename T> inline cudaError_t cudaMallocHost(T **p, size_t bytes) {
    return cudaMallocHost((void **)p, bytes);
}
cudaError_t cudaFree(void *p);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream = 0);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t err);
const char *cudaGetErrorName(cudaError_t err);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop);

// CUDA graphs by stream capture (emu_graph.cpp): work queued on a capturing
// stream is recorded, not run; cudaGraphLaunch issues it again, in order, on
// its stream, with the arguments of the capture (a kernel's by value)
typedef struct emu_graph *cudaGraph_t;
typedef struct emu_graph_exec *cudaGraphExec_t;
typedef struct emu_graph_node *cudaGraphNode_t;
enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2,
};
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                          unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

// function attributes are kept per kernel address (the launch checks them)
cudaError_t emu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value);
template <typename K> inline cudaError_t cudaFuncSetAttribute(K kernel, cudaFuncAttribute a, int v) {
    return emu_func_set_attribute((const void *)kernel, a, v);
}
cudaError_t emu_occupancy(int *blocks, const void *kernel, int threads, size_t shared_bytes);
template <typename K>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, K kernel,
                                                                 int threads, size_t shared) {
    return emu_occupancy(blocks, (const void *)kernel, threads, shared);
}

namespace emu {
// the allocation holding [p, p + bytes), or abort naming the call
void check_device_range(const void *p, size_t bytes, const char *what);
// bytes from p to the end of its allocation, or 0 when p is no device memory
size_t device_bytes_after(const void *p);
// the emulated SM count (EMU_SMS, default 4: small grids still loop)
int sm_count();
// the race detector runs: built (not SAN=1) and EMU_RACECHECK is not 0
bool race_checking();
} // namespace emu

#endif
