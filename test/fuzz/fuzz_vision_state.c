// The vision debug state (magic 20261130): vision_debug_state_parse,
// llmc/interop/debug_state.c. Input: 20 bytes naming the model it is checked against
// (uint32 family, image size, channels, classes, parameters; reduced), then
// the state file.
#include "interop/debug_state.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 20) {
        return 0;
    }
    int family = (int)(fuzz_u32(data, 0) % 3);
    int image_size = (int)(fuzz_u32(data, 1) % 4097);
    int channels = (int)(fuzz_u32(data, 2) % 65);
    int classes = (int)(fuzz_u32(data, 3) % 1025);
    size_t num_parameters = fuzz_u32(data, 4) % (1u << 20);
    Reader r;
    reader_init_memory(&r, data + 20, size - 20);
    VisionDebugState s;
    char err[READER_ERR_BYTES] = {0};
    int rc = vision_debug_state_parse(&s, &r, family, image_size, channels, classes, num_parameters,
                                      err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc == 0) {
        vision_debug_state_free(&s);
    }
    return 0;
}
