# Sourced by the vision reference suites. The partial RMSNorm (prms) divides
# all C features by the RMS of the first k: its backward carries
# x x_k / rms_k^3, so fp32 rounding (ours and the fp32 reference's, summed in
# different orders) is amplified by kappa = rms(all C) / rms(first k), which
# the reference prints as "prms conditioning" (its largest over every norm
# call of the run). Measured on Swin config B (C 8, k 2), 40 seeds: kappa
# 6.9..248 and max error / kappa <= 6.8e-7, while a fixed 1e-5 failed 12 of
# them (seed 686637374: 1.3e-4 at kappa 207). Tolerance: 1e-5 or 2e-6 kappa,
# whichever is larger (3x above the worst ratio measured).
#
# prms_tolerance_flags REFERENCE_OUTPUT: the test_vit flags (-rt, -lt) for it.
prms_tolerance_flags() {
    local kappa
    kappa=$(sed -n 's/.*prms conditioning \([0-9.]*\).*/\1/p' <<<"$1")
    [ -n "$kappa" ] || return 0
    awk -v k="$kappa" 'BEGIN { t = 2e-6 * k; if (t < 1e-5) t = 1e-5;
        printf "-rt %.3g -lt %.3g\n", t, t }'
}
