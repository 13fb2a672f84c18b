// The tensor-core functions of llmc/cuda/mma.cuh (bf16 mma.m16n8k16,
// ldmatrix x1/x2/x4 with and without .trans, the fragment loads and
// stores) against host products on random matrices (dev/cuda/mma_check.cuh).
// On a device this checks the PTX and the layouts the emulator assumes;
// emulated, it checks dev/cuda/emu/emu_mma.cpp. No floatX: both builds are
// the same program. Optional argument: a decimal seed.
#include "common.cuh"
#include "mma_check.cuh"

int main(int argc, char **argv) {
    if (!cuda_device_present("dev/cuda/mma")) return EXIT_SUCCESS;
    DevRng rng = dev_rng_from_args(argc, argv, 0x2545F4914F6CDD1Dull);
    const int failed = mma_check_all(&rng);
    printf("%s\n", failed == 0 ? "OK" : "FAILED");
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
