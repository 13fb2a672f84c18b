// IDX files, raw or gzip (zlib's in-memory inflate): idx_parse, llmc/vision/idx.c,
// as images (3 dimensions) and as labels (1 dimension).
#include "fuzz.h"
#include "vision/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    IdxArray arrays[2];
    int ok[2];
    for (int k = 0; k < 2; k++) {
        char err[READER_ERR_BYTES] = {0};
        int rc = idx_parse(&arrays[k], data, size, k == 0 ? 3 : 1, err, sizeof(err));
        fuzz_check_error(rc, err, sizeof(err));
        ok[k] = rc == 0;
    }
    if (ok[0] && ok[1]) {
        abort(); // one magic cannot be both an image file and a label file
    }
    for (int k = 0; k < 2; k++) {
        if (ok[k]) {
            // touch every byte: the count and sizes describe the buffer
            size_t side = k == 0 ? (size_t)arrays[k].rows * arrays[k].cols : 1;
            size_t n = (size_t)arrays[k].count * side;
            unsigned sum = 0;
            for (size_t i = 0; i < n; i++) sum += arrays[k].data[i];
            if (sum == 0xFFFFFFFFu) abort();
            idx_free(&arrays[k]);
        }
    }
    return 0;
}
