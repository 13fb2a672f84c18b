// The GPT-2 model file (magic 20240326, incl. folded files with their row
// means): gpt2_read, llmc/gpt2/gpt2.c. A checksummed input gets its CRC made right
// first (fuzz_copy_fixing_checksum).
#include "fuzz.h"
#include "gpt2/gpt2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *input = fuzz_copy_fixing_checksum(data, size);
    Reader r;
    reader_init_memory(&r, input, size);
    GPT2 model;
    char err[READER_ERR_BYTES] = {0};
    int rc = gpt2_read(&model, &r, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc == 0) {
        gpt2_free(&model);
    }
    free(input);
    return 0;
}
