// The GPT-2 debug state (magic 20240327): gpt2_debug_state_parse,
// llmc/interop/debug_state.c. Input: 12 bytes naming the model it is checked
// against (uint32 maxT, V, number of parameters, each reduced to a bound),
// then the state file.
#include "interop/debug_state.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 12) {
        return 0;
    }
    int max_seq_len = (int)(fuzz_u32(data, 0) % 4097);
    int vocab_size = (int)(fuzz_u32(data, 1) % 65537);
    size_t num_parameters = fuzz_u32(data, 2) % (1u << 20);
    Reader r;
    reader_init_memory(&r, data + 12, size - 12);
    GPT2DebugState s;
    char err[READER_ERR_BYTES] = {0};
    int rc = gpt2_debug_state_parse(&s, &r, max_seq_len, vocab_size, num_parameters, err,
                                    sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc == 0) {
        gpt2_debug_state_free(&s);
    }
    return 0;
}
