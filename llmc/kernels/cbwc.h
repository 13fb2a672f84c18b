// Column-based weight centring (docs/math.md section 2).
// For a linear layer with W (OC, IC): V = P W, P = I - (1/OC) 1 1^T, i.e.
// every input column of W centred over the outputs; the bias likewise.
#ifndef FOLDNORM_CBWC_H
#define FOLDNORM_CBWC_H

// V[o][i] = W[o][i] - (1/OC) sum_o' W[o'][i]; bias_c = b - mean(b).
// bias and bias_c may be NULL (a layer without bias).
void cbwc_project_weights(float *V, float *bias_c, const float *W, const float *bias, int OC,
                          int IC);

// out[n] = x[n] - mean(x[n]) for each of the N rows of width C (out may
// alias x). Centres embedding rows, and output gradients: with V = P W,
// dx = dy V = (P dy) W and dW = P dV = (P dy)^T x (P symmetric, 1^T V = 0).
void cbwc_centre_rows(float *out, const float *x, int N, int C);

#endif
