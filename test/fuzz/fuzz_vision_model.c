// The ViT/Swin model file (magic 20261129): vision_model_parse,
// llmc/vision/vision_model.c (the family configs of llmc/vision/vit.c and llmc/vision/swin.c), as
// a ViT and as a Swin file. A checksummed input gets its CRC made right
// first (fuzz_copy_fixing_checksum).
#include "fuzz.h"
#include "vision/vision_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *input = fuzz_copy_fixing_checksum(data, size);
    for (int family = FAMILY_VIT; family <= FAMILY_SWIN; family++) {
        Reader r;
        reader_init_memory(&r, input, size);
        int32_t header[VISION_HEADER_INTS];
        float *params;
        size_t n;
        char err[READER_ERR_BYTES] = {0};
        int rc =
            vision_model_parse(&r, (VisionFamily)family, header, &params, &n, err, sizeof(err));
        fuzz_check_error(rc, err, sizeof(err));
        if (rc == 0) {
            free(params);
        }
    }
    free(input);
    return 0;
}
