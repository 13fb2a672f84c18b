// The training state of a checkpoint (state_STEP.bin, magic 20241129):
// train_state_read, llmc/gpt2/checkpoint.c. Input: 8 bytes (uint32 number of the
// model's parameters, reduced; int32 the step asked for), then the file,
// whose CRC is made right first (fuzz_copy_fixing_checksum).
#include "gpt2/checkpoint.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8) {
        return 0;
    }
    GPT2 model;
    memset(&model, 0, sizeof(model));
    model.num_parameters = fuzz_u32(data, 0) % (1u << 20);
    int step = (int)fuzz_u32(data, 1);
    unsigned char *input = fuzz_copy_fixing_checksum(data + 8, size - 8);
    Reader r;
    reader_init_memory(&r, input, size - 8);
    TrainProgress progress;
    char err[READER_ERR_BYTES] = {0};
    int rc = train_state_read(&r, step, &model, &progress, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc != 0 && (model.m_memory != NULL || model.v_memory != NULL)) {
        abort(); // a failed read leaves no moments behind
    }
    free(model.m_memory);
    free(model.v_memory);
    free(input);
    return 0;
}
