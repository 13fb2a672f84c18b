// CUDA emulation: the cuDNN shim's refusals must fire. `cudnn_selftest CASE`
// builds llmc/cuda/cudnn_attention.cuh's graphs (or a descriptor by hand)
// with one thing wrong and must fail with the message test/suites/cuda_emu.sh
// expects; `cudnn_selftest ok` must run the trainer's layout forward and
// backward. Built only under emulation, in bf16 (cuDNN attention's type).
#include <stdio.h>
#include <string.h>

#include "cuda/cudnn_attention.cuh"

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "ok";
    const int B = 1, T = 24, NH = 2, hs = 16, C = NH * hs;
    CudnnAttentionLayout layout = cudnn_attention_layout(B, T, NH, hs);
    if (strcmp(c, "stride") == 0) { // Q declared with K^T's strides: the head dimension strided
        layout.q.strides[2] = 1;
        layout.q.strides[3] = 3 * C;
    }
    if (strcmp(c, "dtype") == 0) layout.q.type = CUDNN_DATA_FLOAT; // an fp32 Q
    if (strcmp(c, "missing-attribute") == 0) { // a matmul operation without its C tensor
        CudnnAttention own = {};
        const CudnnTensorLayout m = {{1, 1, 8, 8}, {64, 64, 8, 1}, CUDNN_DATA_BFLOAT16};
        cudnnBackendDescriptor_t a = cudnn_tensor(&own, 1, m, false, false);
        cudnnBackendDescriptor_t b = cudnn_tensor(&own, 2, m, false, false);
        cudnnBackendDescriptor_t mm = cudnn_new(&own, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
        const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
        cudnn_set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fp32);
        CUDNN_CHECK(cudnnBackendFinalize(mm));
        cudnnBackendDescriptor_t op = cudnn_new(&own, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
        cudnn_set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
        cudnn_set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
        cudnn_set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
        CUDNN_CHECK(cudnnBackendFinalize(op));
    }
    CudnnAttention *att = cudnn_attention_create_layout(B, T, NH, hs, true, 0, layout);
    const size_t btc = (size_t)B * T * C;
    floatX *qkv, *out, *dout, *dqkv;
    float *stats;
    CUDA_CHECK(cudaMalloc(&qkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dqkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dout, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&stats, (size_t)B * NH * T * sizeof(float)));
    CUDA_CHECK(cudaMemset(qkv, 0, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dout, 0, btc * sizeof(floatX)));
    const int64_t uids[] = {CUDNN_UID_Q, CUDNN_UID_K, CUDNN_UID_V, CUDNN_UID_O, CUDNN_UID_STATS,
                            CUDNN_UID_SCALE, CUDNN_UID_NEG_INF};
    void *pointers[] = {qkv, qkv + C, qkv + 2 * C, out, stats, &att->scale, &att->neg_inf};
    if (strcmp(c, "workspace") == 0) att->workspace = NULL; // the plan needs one
    if (strcmp(c, "variant-pack") == 0) { // no pointer for the stats (uid 5)
        const int64_t u[] = {CUDNN_UID_Q, CUDNN_UID_K, CUDNN_UID_V, CUDNN_UID_O, CUDNN_UID_SCALE,
                             CUDNN_UID_NEG_INF};
        void *p[] = {qkv, qkv + C, qkv + 2 * C, out, &att->scale, &att->neg_inf};
        cudnn_execute(att, att->fwd, 6, u, p);
    }
    if (strcmp(c, "misaligned") == 0) { // stats 4 bytes off the 16 the graph declares
        pointers[4] = stats + 1;
        cudnn_execute(att, att->fwd, 7, uids, pointers);
    }
    if (strcmp(c, "overlap") == 0) { // out written over q's columns of qkv
        pointers[3] = qkv;
        cudnn_execute(att, att->fwd, 7, uids, pointers);
    }
    cudnn_attention_forward(att, out, stats, qkv);
    cudnn_attention_backward(att, dqkv, dout, out, stats, qkv);
    CUDA_CHECK(cudaDeviceSynchronize());
    if (strcmp(c, "ok") != 0) {
        printf("no cuDNN shim check fired for '%s'\n", c);
        return 0;
    }
    printf("cudnn attention forward and backward ran on the trainer's layout\n");
    cudnn_attention_free(att);
    void *dev[] = {qkv, dqkv, out, dout, stats};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    return 0;
}
